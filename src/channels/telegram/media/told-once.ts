/**
 * Notices a person hears once, not with every photo or voice message ("I cannot see pictures
 * yet"): remembered per chat and notice while the bot runs, like the refusal of strangers, so
 * after a restart a person may hear one once more. Bounded, so a bot in many chats does not grow
 * without end: past {@link MAX_REMEMBERED} the oldest are let go (at worst, told again).
 */
const MAX_REMEMBERED = 10_000;

export interface ToldOnce {
  /** True the first time for this chat and notice; false afterwards. */
  first(chatKey: string, notice: string): boolean;
}

export function createToldOnce(): ToldOnce {
  const told = new Set<string>();
  return {
    first(chatKey, notice) {
      const key = `${notice}\u0000${chatKey}`;
      if (told.has(key)) return false;
      told.add(key);
      if (told.size > MAX_REMEMBERED) told.delete(told.values().next().value as string);
      return true;
    },
  };
}
