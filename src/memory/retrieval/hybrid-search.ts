/**
 * Hybrid search over a scope's episodes and memories: candidates from the vector index and the
 * full-text index, scored by a weighted sum of semantic similarity, BM25, recency, importance and
 * (memories) confidence. Episodes also get: context (the best neighbouring turn's relevance),
 * passage (keyword coverage of the turn with its neighbours), session (how well their
 * conversation matches), time (closeness to a date the query names), speaker (the author is named
 * in the query) and substance (a prior against near-empty turns). Every result carries the parts
 * that made its score; the figures behind the weights are in docs/retrieval.md.
 *
 * The parts live beside it: the query's embedding and vector hits in `search-vectors.ts`, the
 * episode candidates and their scoring in `episode-search.ts` (neighbouring turns and
 * conversations in `turn-context.ts`), memories in `memory-search.ts`, the temporal strategy in
 * `temporal-search.ts`, results in `search-results.ts`; weights and shared rules in
 * `search-scoring.ts`, dates in `query-dates.ts`, the query's filters in `search-filters.ts`.
 *
 * Knowledge ranks before its evidence (`knowledge-first.ts`): a current memory comes just above
 * the episodes it was learned from, a superseded version below its current one, and forgotten
 * episodes never come back.
 *
 * Scoping: every store call names the scope; ids that come back are re-read from the database
 * with the scope in the query, so nothing of another scope can leak through any path.
 */
import type { Logger } from '../../shared/logger';
import { ValidationError } from '../../shared/errors';
import type { EpisodeRepository } from '../../storage/episode-repository';
import type { FullTextIndex } from '../../storage/full-text';
import type { MemoryRepository } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { Embedder } from '../embeddings/embedder';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorIndex } from '../vectors/vector-index';
import { createEpisodeSide, type TurnCandidates } from './episode-search';
import { rankKnowledgeFirst } from './knowledge-first';
import type { MemoryQuery, ResultKind, SearchResult } from './memory-query';
import { scoreMemories } from './memory-search';
import { toResult } from './search-results';
import { DEFAULT_WEIGHTS, type Scored, type SearchWeights } from './search-scoring';
import { createVectorSide } from './search-vectors';
import { temporalItems } from './temporal-search';

export type { TurnCandidates } from './episode-search';
export { embeddingText } from './search-vectors';

export interface SearchOutcome {
  readonly results: SearchResult[];
  /** Why a part of the search was left out (vector index unavailable, embedder changed, ...). */
  readonly notes: string[];
}

export interface HybridSearch {
  search(query: MemoryQuery): Promise<SearchOutcome>;
}

/** Hybrid search with its episode candidates open to an evaluation (`eval locomo --cv`). */
export interface InspectableSearch extends HybridSearch {
  /** The hybrid strategy's episode candidates for a query, gathered exactly as `search` gathers them. */
  turnCandidates(query: MemoryQuery): Promise<TurnCandidates>;
  /** The weights and neighbour radius this search scores with. */
  readonly weights: SearchWeights;
  readonly radius: number;
}

export interface HybridSearchDeps {
  readonly prisma: PrismaClient;
  readonly episodes: EpisodeRepository;
  readonly memories: MemoryRepository;
  readonly fullText: FullTextIndex;
  /** Vector search is skipped (with a note) when these are absent or the index is not ready. */
  readonly embedder?: Embedder;
  readonly index?: VectorIndex;
  readonly guard?: IndexGuard;
  readonly logger: Logger;
  readonly weights?: Partial<SearchWeights>;
  /** Candidates taken from the vector index before scoring (default 300). */
  readonly candidates?: number;
  /**
   * Candidates taken from the full-text index. Matching rows are cheap to rank, and a turn that
   * shares one rare word with the query should keep its own keyword score when it joins the pool
   * as a neighbour (default 1000).
   */
  readonly keywordCandidates?: number;
  /** Keyword candidates whose rows are read and scored, best summed score first (default 200). */
  readonly keywordPool?: number;
  /** Turns on each side of a candidate that lend it context. */
  readonly contextRadius?: number;
  readonly clock?: () => Date;
}

/**
 * The search over one store: its vector side, episode side and memory side put together, the
 * knowledge-first order applied to what they score, the best `limit` reported.
 */
export function createHybridSearch(deps: HybridSearchDeps): InspectableSearch {
  const weights: SearchWeights = { ...DEFAULT_WEIGHTS, ...deps.weights };
  const candidates = deps.candidates ?? 300;
  const radius = deps.contextRadius ?? 2;
  const clock = deps.clock ?? (() => new Date());
  const log = deps.logger.child({ component: 'search' });
  const vectors = createVectorSide({ embedder: deps.embedder, index: deps.index, guard: deps.guard, candidates, log });
  const episodes = createEpisodeSide({
    ...deps,
    vectors,
    weights,
    radius,
    keywordCandidates: deps.keywordCandidates ?? 1000,
    keywordPool: deps.keywordPool ?? 200,
  });
  const memorySide = { ...deps, vectors, weights, candidates };

  return {
    weights,
    radius,
    async turnCandidates(query) {
      const text = query.semanticQuery?.trim() ?? '';
      if (text === '') throw new ValidationError('a hybrid search needs a query text', { code: 'search.no_query' });
      const notes: string[] = [];
      const vector = vectors.queryVector(text, notes);
      return episodes.gather({ query: { ...query, strategy: 'hybrid' }, text, vector, now: query.now ?? clock(), notes });
    },
    async search(query) {
      const strategy = query.strategy ?? 'hybrid';
      const limit = Math.max(1, Math.min(query.limit ?? 10, 200));
      const text = query.semanticQuery?.trim() ?? '';
      if (strategy !== 'temporal' && text === '') {
        throw new ValidationError(`a ${strategy} search needs a query text`, { code: 'search.no_query' });
      }
      const now = query.now ?? clock();
      let kinds: ResultKind[] = [...(query.kinds ?? ['episode', 'memory'])];
      if ((query.topics?.length ?? 0) > 0 || (query.entities?.length ?? 0) > 0) kinds = kinds.filter((k) => k === 'episode');
      const notes: string[] = [];
      let scored: Scored[];
      if (strategy === 'temporal') {
        scored = await temporalItems(deps, query, now, kinds, limit);
      } else {
        // Not awaited here: the keyword side of each kind runs while the query is embedded.
        const vector = strategy === 'keyword' ? Promise.resolve(undefined) : vectors.queryVector(text, notes);
        const input = { query: { ...query, strategy }, text, vector, now, notes };
        const [found, memories] = await Promise.all([
          kinds.includes('episode') ? episodes.score(input) : Promise.resolve([]),
          kinds.includes('memory') ? scoreMemories(memorySide, input) : Promise.resolve([]),
        ]);
        scored = [...found, ...memories];
      }
      scored = await rankKnowledgeFirst(deps.prisma, query.scopeId, scored);
      scored.sort((a, b) => b.base - a.base || a.id.localeCompare(b.id));
      return { results: scored.slice(0, limit).map(toResult), notes: [...new Set(notes)] };
    },
  };
}
