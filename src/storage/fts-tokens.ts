/**
 * The words of a text as the full-text index holds them: SQLite FTS5's `porter unicode61
 * remove_diacritics 2` tokenizer (letters, digits and private-use characters make words; case and
 * diacritics are folded; each word is Porter-stemmed). The index finds a scope's rows holding a
 * word; how often the word occurs in each row (BM25's term frequency) is counted here, from the
 * row's text, so that no index-wide statistic is needed (full-text.ts).
 */
import { porterStem } from './porter-stemmer';

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const MARKS = /\p{M}+/gu;

/**
 * Stems already computed. Stemming is nine-tenths of tokenizing a row (~13 µs for a chat turn of
 * ~30 words, against ~1.3 µs to fold and split it), and a search may count a word in thousands of
 * rows whose words mostly repeat, so each distinct word is stemmed once. Bounded: emptied when full.
 */
const STEMS = new Map<string, string>();
const MAX_STEMS = 200_000;

function stemOf(word: string): string {
  let stem = STEMS.get(word);
  if (stem === undefined) {
    if (STEMS.size >= MAX_STEMS) STEMS.clear();
    STEMS.set(word, (stem = porterStem(word)));
  }
  return stem;
}

/** The stemmed words of a text, in order. */
export function ftsTokens(text: string): string[] {
  return ftsWords(text).map(stemOf);
}

/**
 * The words of a text as the tokenizer splits them (case and diacritics folded), not yet stemmed.
 * Words of letters and digits, the only words a query has, are FTS5's exactly; FTS5 also makes
 * tokens of some symbols (emoji newer than Unicode 6.1), so a row's length is read from FTS5.
 */
export function ftsWords(text: string): string[] {
  const folded = text.normalize('NFD').replace(MARKS, '').toLowerCase();
  return folded.match(WORD) ?? [];
}

/**
 * How many of `words` (from {@link ftsWords}) stem to `stem`. Porter stemming only rewrites a
 * word's ending and never its first letter, so only the words sharing the stem's first letter are
 * stemmed (a test checks the property on every word of the LoCoMo file).
 */
export function stemCount(words: readonly string[], stem: string): number {
  const first = stem[0];
  let n = 0;
  for (const word of words) if (word[0] === first && stemOf(word) === stem) n++;
  return n;
}
