/**
 * The parts of a hybrid search score and their weights, and the small scoring rules they share:
 * recency, normalized hit scores, a speaker named in the query, substance.
 *
 * Why in one place: the episode path, the memory path and the neighbouring-turn context all add
 * the same parts with the same weights; the figures behind the weights are in docs/retrieval.md.
 */
import { queryTerms, type KeywordHit } from '../../storage/full-text';
import type { EpisodeSearchRow } from '../../storage/episode-repository';
import type { MemoryWithSources } from '../../storage/memory-repository';
import type { VectorHit } from '../vectors/vector-index';
import type { ResultKind, ScoreParts } from './memory-query';

/** Weights of the score parts. Documented in docs/retrieval.md with the figures they give. */
export interface SearchWeights {
  readonly semantic: number;
  readonly keyword: number;
  readonly recency: number;
  readonly importance: number;
  readonly confidence: number;
  /** Share of the best neighbouring turn's relevance an episode receives. */
  readonly context: number;
  /** Closeness to a date the query names (see `query-dates.ts`). */
  readonly time: number;
  /** Relevance of the item's conversation (its best turn's relevance, relative to the best conversation's). */
  readonly session: number;
  /** The turn's author is a person the query names. */
  readonly speaker: number;
  /** Keyword coverage of the passage around a turn (the turns within the context radius). */
  readonly passage: number;
  /**
   * A prior for turns that say something: "Bye Nate!" shares the name with many questions and
   * BM25's length normalization favours it, but a fact takes a sentence.
   */
  readonly substance: number;
}

/**
 * The weights hybrid search uses unless a caller overrides some. The episode weights are the ones
 * `eval locomo --cv`'s coordinate search chooses on all five development conversations (its
 * cross-validated figures, where each conversation is measured with weights chosen on the other
 * four, are in docs/retrieval.md); keyword is the scale, recency, importance and confidence are
 * not tuned (LoCoMo has no signal for them).
 */
export const DEFAULT_WEIGHTS: SearchWeights = {
  semantic: 0.4,
  keyword: 0.5,
  recency: 0.03,
  importance: 0.03,
  confidence: 0.1,
  context: 0.6,
  time: 1,
  session: 0.4,
  speaker: 0.2,
  passage: 0.2,
  substance: 0.4,
};

/** Recency half-life: a month-old item counts half as recent as one from today. */
const RECENCY_HALF_LIFE_DAYS = 30;
/** Words from which a turn counts as fully substantial (a median chat turn has about 20). */
const SUBSTANTIAL_WORDS = 20;
const DAY_MS = 86_400_000;

/** A candidate being scored: its running score (`base`), the parts that made it, and its row. */
export interface Scored {
  kind: ResultKind;
  id: string;
  base: number;
  parts: ScoreParts;
  episode?: EpisodeSearchRow;
  memory?: MemoryWithSources;
}

/** 1 for today, halving every {@link RECENCY_HALF_LIFE_DAYS} days of age. */
export function recencyOf(time: Date, now: Date): number {
  const ageDays = Math.max(0, (now.getTime() - time.getTime()) / DAY_MS);
  return 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}

/** Scales hit scores into 0-1 by the best one (keeps their ratios). */
export function normalizedScores(hits: ReadonlyArray<KeywordHit | VectorHit>): Map<string, number> {
  const max = hits.reduce((m, h) => Math.max(m, h.score), 0);
  return new Map(hits.map((h) => [h.id, max > 0 ? Math.max(0, h.score) / max : 0]));
}

/**
 * Whether an author is named in the query ("what did Melanie paint?" names the author Melanie,
 * or "Mel" for "Melanie Smith"'s first name): a question about a person is most often answered
 * by what that person said. Every word of the author's name counts.
 */
export function namedIn(queryWords: ReadonlySet<string>, author: string): boolean {
  return queryTerms(author).some((word) => queryWords.has(word));
}

/** The substance prior of a turn: 0-1 by its words, full from {@link SUBSTANTIAL_WORDS}. */
export function substanceOf(text: string): number {
  const words = text.match(/[\p{L}\p{N}]+/gu)?.length ?? 0;
  return Math.min(1, words / SUBSTANTIAL_WORDS);
}

/** Scores and parts are reported to four decimals. */
export function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
