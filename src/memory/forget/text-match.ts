/**
 * When does a text "hold" what is being forgotten? Forgetting must reach every copy and nothing
 * else, so the test is word-based and the same everywhere (memories, episodes, summaries, audit
 * text, digests, entity profiles, export files):
 *
 * - forgetting by words: a text holds the words when it contains every one of them as a whole
 *   word, read the way the full-text search reads it (storage/fts-tokens.ts: case and accents
 *   folded, each word Porter-stemmed), so what a search for the words finds, forgetting them
 *   reaches: "merce" finds "Mercè", "dog" finds "dogs", "travel" finds "travelling";
 * - forgetting one memory: a text quotes the memory when it holds most of the memory's
 *   distinctive words (stopwords left out; {@link QUOTE_SHARE} of them, at least two, or all when
 *   it has fewer), or two of them side by side as in the memory (a phrase: "black coffee").
 *   "Have a lovely weekend with Hannah!" does not quote "Ana drinks black coffee every morning";
 *   "Your usual black coffee, and some toast" does.
 */
import { ftsTokens } from '../../storage/fts-tokens';
import { queryTerms } from '../../storage/full-text';

/** Share of a memory's distinctive words a text must hold to count as quoting it. */
export const QUOTE_SHARE = 0.6;
const MIN_QUOTE_WORDS = 2;

/** The words of a text as the full-text index holds them (folded and stemmed). */
export function wordsOf(text: string): Set<string> {
  return new Set(ftsTokens(text));
}

/**
 * Whole-word match as search matches: the term's stems are among the text's ("dog" finds "dogs",
 * "merce" finds "Mercè"). A term the tokenizer splits in two (none from queryTerms) needs both.
 */
export function containsWord(words: ReadonlySet<string>, term: string): boolean {
  const stems = ftsTokens(term);
  return stems.length > 0 && stems.every((stem) => words.has(stem));
}

/** Whether `text` holds every term (whole words, folded and stemmed as search reads them). */
export function holdsAll(text: string, terms: readonly string[]): boolean {
  if (terms.length === 0) return false;
  const present = wordsOf(text);
  return terms.every((term) => containsWord(present, term));
}

/** A matcher for forgetting by words: true when a text holds every term. */
export function wordsMatcher(terms: readonly string[]): (text: string) => boolean {
  return (text) => holdsAll(text, terms);
}

/** Consecutive pairs of distinctive words, as "a b". */
function phrases(text: string): Set<string> {
  const words = contentWords(text);
  const out = new Set<string>();
  for (let i = 1; i < words.length; i++) out.add(`${words[i - 1]} ${words[i]}`);
  return out;
}

/** The stemmed words of a text in order, stopwords left out. */
function contentWords(text: string): string[] {
  const distinct = new Set(queryTerms(text).flatMap(ftsTokens));
  return ftsTokens(text).filter((w) => distinct.has(w));
}

/** Whether `text` quotes `memory` (most of its distinctive words, or a phrase of it; see the module comment). */
export function quotes(text: string, memory: string): boolean {
  const terms = queryTerms(memory);
  if (terms.length === 0) return false;
  const present = wordsOf(text);
  const held = terms.filter((term) => containsWord(present, term)).length;
  const needed = Math.min(terms.length, Math.max(MIN_QUOTE_WORDS, Math.ceil(terms.length * QUOTE_SHARE)));
  if (held >= needed) return true;
  const said = phrases(text);
  for (const phrase of phrases(memory)) if (said.has(phrase)) return true;
  return false;
}

/** The text of a JSON value, for matching (keys and values). */
export function jsonText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
