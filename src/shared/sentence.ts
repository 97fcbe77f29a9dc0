/**
 * A message as a person or an operator reads it: starting with a capital letter. Error messages
 * are written to be composed ("could not read X: " + cause), so many start in lower case; each
 * door that shows one on its own (CLI stderr, an HTTP error body, a chat reply) passes it through
 * here instead of every message being written twice. Error `code`s are never touched.
 */

/** A first word that is a plain word ("missing", "no"), not a name to keep as written. */
const PLAIN_WORD = /^\p{Ll}[\p{L}'’]*[,;]?$/u;

/**
 * `text` with its first letter capitalised when it starts with a plain lower-case word. A field
 * path (`episodes[0].content: ...`), a header or flag (`x-nocturne-signature`, `--scope`), a field
 * name before a colon (`user: ...`) or a quoted name stays as written: it names something exactly.
 */
export function asSentence(text: string): string {
  const first = /^\S+/.exec(text)?.[0] ?? '';
  if (!PLAIN_WORD.test(first)) return text;
  return text.charAt(0).toUpperCase() + text.slice(1);
}
