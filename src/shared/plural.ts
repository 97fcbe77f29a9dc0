/**
 * Counting things in words people read: `plural(1, 'memory')` is "1 memory",
 * `plural(3, 'memory', 'memories')` is "3 memories". Every user-facing text that counts something
 * (chat commands, the CLI, digests, sleep summaries) says it through this helper, so no "(s)"
 * and no "1 memories" reaches anyone.
 */

/** The word for `n` things: `one` for exactly 1, `many` otherwise (default: `one` + "s"). */
export function pluralWord(n: number, one: string, many: string = `${one}s`): string {
  return n === 1 ? one : many;
}

/** `n` and the word for `n` things: "1 memory", "0 memories", "2 memories". */
export function plural(n: number, one: string, many: string = `${one}s`): string {
  return `${n} ${pluralWord(n, one, many)}`;
}
