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

/** The stemmed words of a text, in order. */
export function ftsTokens(text: string): string[] {
  const folded = text.normalize('NFD').replace(MARKS, '').toLowerCase();
  return (folded.match(WORD) ?? []).map(porterStem);
}

/** How many times the indexed form of a word occurs in a text's `ftsTokens`; `stem` is `ftsTokens(word)[0]`. */
export function termFrequency(tokens: readonly string[], stem: string): number {
  let n = 0;
  for (const token of tokens) if (token === stem) n++;
  return n;
}
