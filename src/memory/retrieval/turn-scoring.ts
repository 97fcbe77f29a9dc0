/**
 * Scoring a query's episode candidates: everything hybrid search does with turns once the two
 * indexes have answered. The candidates' raw evidence (cosines and BM25 scores, normalized; the
 * query's words and dates; its "now") goes in with the weights, scored turns come out.
 *
 * Why a pure step of its own: what the indexes return does not depend on the weights, so an
 * evaluation can gather the evidence of every question once and score it again for each
 * candidate set of weights (`eval locomo --cv`), with exactly the code a search runs. The only
 * I/O, reading neighbouring turns by position, goes through `atTurns`.
 */
import type { EpisodeSearchRow } from '../../storage/episode-repository';
import type { ScoreParts } from './memory-query';
import { closenessTo, type DateInterval } from './query-dates';
import { namedIn, recencyOf, substanceOf, type Scored, type SearchWeights } from './search-scoring';
import { addSessionRelevance, lendTurnContext } from './turn-context';

/** What the indexes said about a query's turns: independent of the weights. */
export interface TurnEvidence {
  /** The query's words as the full-text index scored them, and each hit's BM25 per word. */
  readonly terms: readonly string[];
  readonly termScores: ReadonlyMap<string, readonly number[]>;
  /** BM25 (summed over the words) / the best, for every full-text hit. */
  readonly keyword: ReadonlyMap<string, number>;
  /** Cosine / the best, for every vector candidate. */
  readonly semantic: ReadonlyMap<string, number>;
  /** Absolute dates the query names. */
  readonly dates: readonly DateInterval[];
  /** The query's words (a speaker named in it). */
  readonly queryWords: ReadonlySet<string>;
  readonly now: Date;
}

/**
 * A row's substance, computed once per row object: an evaluation scores the same rows under many
 * weight settings (`eval locomo --cv`), and counting words is the costliest part of a turn's own score.
 */
const substanceMemo = new WeakMap<EpisodeSearchRow, number>();
function substanceOfRow(row: EpisodeSearchRow): number {
  let value = substanceMemo.get(row);
  if (value === undefined) substanceMemo.set(row, (value = substanceOf(row.content)));
  return value;
}

export interface ScoreTurnsParams {
  readonly evidence: TurnEvidence;
  /** The candidates' rows (vector candidates and the best full-text candidates). */
  readonly rows: readonly EpisodeSearchRow[];
  readonly weights: SearchWeights;
  /** Turns on each side that count as neighbours. */
  readonly radius: number;
  /** Reads the turns at these positions (of the query's scope). */
  readonly atTurns: (positions: Array<{ conversationId: string; turn: number }>) => Promise<EpisodeSearchRow[]>;
}

/**
 * Scores the candidates and the neighbours of the strongest ones: each turn's own parts, then
 * context, passage and session (`turn-context.ts`). Returns every scored turn, unsorted.
 */
export async function scoreTurns(params: ScoreTurnsParams): Promise<Map<string, Scored>> {
  const { evidence, weights } = params;
  // What the query's words and meaning say about a turn itself; the only thing neighbours and
  // conversations lend (recency, importance and dates are the turn's own).
  const relevance = new Map<string, number>();
  // Whether each author is named in the query, once per author (a scope has few).
  const named = new Map<string, boolean>();
  const isNamed = (author: string) => {
    let value = named.get(author);
    if (value === undefined) named.set(author, (value = namedIn(evidence.queryWords, author)));
    return value;
  };
  const base = (e: EpisodeSearchRow): Scored => {
    const parts: ScoreParts = {
      semantic: evidence.semantic.get(e.id) ?? 0,
      keyword: evidence.keyword.get(e.id) ?? 0,
      recency: recencyOf(e.timestamp, evidence.now),
      importance: e.importance,
    };
    if (weights.time > 0 && evidence.dates.length > 0) parts.time = closenessTo(evidence.dates, e.timestamp);
    if (weights.speaker > 0 && e.author) parts.speaker = isNamed(e.author) ? 1 : 0;
    if (weights.substance > 0) parts.substance = substanceOfRow(e);
    const own = weights.semantic * parts.semantic! + weights.keyword * parts.keyword!;
    relevance.set(e.id, own);
    const score =
      own +
      weights.recency * parts.recency! +
      weights.importance * parts.importance! +
      weights.time * (parts.time ?? 0) +
      weights.speaker * (parts.speaker ?? 0) +
      weights.substance * (parts.substance ?? 0);
    return { kind: 'episode', id: e.id, base: score, parts, episode: e };
  };
  const scored = new Map(params.rows.map((e) => [e.id, base(e)]));
  // Neighbouring turns lend context, and the neighbours of the strongest candidates join the
  // pool (the answer is often the next turn); then the conversation's own relevance.
  await lendTurnContext({
    scored,
    relevance,
    terms: evidence.terms,
    termScores: evidence.termScores,
    weights,
    radius: params.radius,
    atTurns: params.atTurns,
    score: base,
  });
  addSessionRelevance(scored, relevance, weights);
  return scored;
}
