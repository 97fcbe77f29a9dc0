/**
 * The episode side of hybrid search: a query's turn candidates from both indexes (gathered), then
 * scored with their neighbours and conversations (`turn-scoring.ts`) and filtered.
 *
 * Why gathering is its own step: what the indexes return does not depend on the weights, so an
 * evaluation gathers each question's candidates once and scores them under many weights
 * (`eval locomo --cv`, through {@link InspectableSearch.turnCandidates}).
 */
import type { EpisodeRepository, EpisodeSearchRow } from '../../storage/episode-repository';
import { queryTerms, type FullTextIndex } from '../../storage/full-text';
import type { PrismaClient } from '../../storage/prisma';
import type { MemoryQuery } from './memory-query';
import { datesInQuery } from './query-dates';
import { episodePasses, topicFilter } from './search-filters';
import { normalizedScores, type Scored, type SearchWeights } from './search-scoring';
import type { VectorSide } from './search-vectors';
import { scoreTurns, type TurnEvidence } from './turn-scoring';

/** A query's episode candidates before scoring: what `scoreTurns` needs besides the weights. */
export interface TurnCandidates {
  readonly evidence: TurnEvidence;
  readonly rows: EpisodeSearchRow[];
}

/** What the episode side reads and how it scores. */
export interface EpisodeSideDeps {
  readonly prisma: PrismaClient;
  readonly episodes: EpisodeRepository;
  readonly fullText: FullTextIndex;
  readonly vectors: VectorSide;
  readonly weights: SearchWeights;
  /** Turns on each side of a candidate that lend it context. */
  readonly radius: number;
  /** Candidates taken from the full-text index, and how many of the best of them are read and scored. */
  readonly keywordCandidates: number;
  readonly keywordPool: number;
}

/** One search's question to the episode side: the query, its text, its vector (still being embedded) and its "now". */
export interface EpisodeSearchInput {
  readonly query: MemoryQuery;
  readonly text: string;
  readonly vector: Promise<Float32Array | undefined>;
  readonly now: Date;
  readonly notes: string[];
}

/** The episode side: its candidates (independent of the weights), and its scored, filtered turns. */
export interface EpisodeSide {
  gather(input: EpisodeSearchInput): Promise<TurnCandidates>;
  score(input: EpisodeSearchInput): Promise<Scored[]>;
}

/** The episode side over the given indexes and repository. */
export function createEpisodeSide(deps: EpisodeSideDeps): EpisodeSide {
  /**
   * A query's episode candidates and what the indexes said about them (independent of the
   * weights): the vector candidates, the full-text hits with their per-word scores, and the rows
   * of the vector candidates and of the best full-text candidates.
   */
  async function gather({ query, text, vector, now, notes }: EpisodeSearchInput): Promise<TurnCandidates> {
    const useKeyword = query.strategy !== 'semantic';
    const useVector = query.strategy !== 'keyword';
    // The keyword side (full-text query, then its rows) runs while the query is being embedded on
    // the embedder's thread; the vector side starts when the vector arrives.
    const keywordSide = (async () => {
      // Scored word by word: the sum is the turn's BM25, and the per-word scores give the passage coverage.
      const termHits = useKeyword
        ? await deps.fullText.searchTerms({ scopeId: query.scopeId, kind: 'episode', query: text, limit: deps.keywordCandidates })
        : { terms: [], hits: [] };
      const kw = termHits.hits.map(({ id, scores }) => ({ id, score: scores.reduce((a, b) => a + b, 0) }));
      // Rows are read for the best keyword candidates only (the per-word lists of a long query add
      // up to thousands of ids in a large scope); every hit keeps its score for neighbours.
      const pool = kw.length <= deps.keywordPool ? kw : [...kw].sort((a, b) => b.score - a.score).slice(0, deps.keywordPool);
      const rows =
        pool.length > 0
          ? await deps.episodes.searchRows(
              query.scopeId,
              pool.map((h) => h.id),
            )
          : [];
      return { termHits, kw, rows };
    })();
    const vectorSide = (async () => (useVector ? deps.vectors.hits(query, await vector, 'episode', notes) : []))();
    const [{ termHits, kw, rows: keywordRows }, vec] = await Promise.all([keywordSide, vectorSide]);
    const semantic = normalizedScores(vec);
    const read = new Set(keywordRows.map((e) => e.id));
    const vectorOnly = [...semantic.keys()].filter((id) => !read.has(id));
    const rows = vectorOnly.length > 0 ? [...keywordRows, ...(await deps.episodes.searchRows(query.scopeId, vectorOnly))] : keywordRows;
    const evidence: TurnEvidence = {
      terms: termHits.terms,
      termScores: new Map(termHits.hits.map((hit) => [hit.id, hit.scores])),
      keyword: normalizedScores(kw),
      semantic,
      dates: datesInQuery(text),
      queryWords: new Set(queryTerms(text)),
      now,
    };
    return { evidence, rows };
  }

  return {
    gather,
    async score(input) {
      const { query } = input;
      const { evidence, rows } = await gather(input);
      const tagged = await topicFilter(
        deps.prisma,
        query,
        rows.map((e) => e.id),
      );
      const scored = await scoreTurns({
        evidence,
        rows,
        weights: deps.weights,
        radius: deps.radius,
        atTurns: (positions) => deps.episodes.atTurns(query.scopeId, positions),
      });
      const taggedAll = tagged ? await topicFilter(deps.prisma, query, [...scored.keys()]) : undefined;
      return [...scored.values()].filter((s) => episodePasses(query, s.episode!, taggedAll));
    },
  };
}
