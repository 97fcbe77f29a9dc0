/**
 * Hybrid search over a scope's episodes and memories: candidates from the vector index and the
 * full-text index, scored by a weighted sum of semantic similarity, BM25, recency, importance and
 * (memories) confidence. Episodes also get: context (the best neighbouring turn's relevance),
 * passage (keyword coverage of the turn with its neighbours), session (how well their
 * conversation matches), time (closeness to a date the query names), speaker (the author is named
 * in the query) and substance (a prior against near-empty turns). Every result carries the parts
 * that made its score; the figures behind the weights are in docs/retrieval.md.
 *
 * The parts live beside it: weights and shared rules in `search-scoring.ts`, dates in
 * `query-dates.ts`, neighbouring turns and conversations in `turn-context.ts`, the query's
 * filters in `search-filters.ts`.
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
import type { EpisodeRepository, EpisodeSearchRow } from '../../storage/episode-repository';
import { queryTerms, type FullTextIndex } from '../../storage/full-text';
import type { MemoryRepository, MemoryWithSources } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { Embedder } from '../embeddings/embedder';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorHit, VectorIndex } from '../vectors/vector-index';
import type { MemoryQuery, ResultKind, ScoreParts, SearchResult } from './memory-query';
import { rankKnowledgeFirst } from './knowledge-first';
import { datesInQuery } from './query-dates';
import { episodePasses, isFaded, memoryPasses, topicFilter as tagFilter } from './search-filters';
import { DEFAULT_WEIGHTS, normalizedScores, recencyOf, round, type Scored, type SearchWeights } from './search-scoring';
import { scoreTurns, type TurnEvidence } from './turn-scoring';

export interface SearchOutcome {
  readonly results: SearchResult[];
  /** Why a part of the search was left out (vector index unavailable, embedder changed, ...). */
  readonly notes: string[];
}

export interface HybridSearch {
  search(query: MemoryQuery): Promise<SearchOutcome>;
}

/** A query's episode candidates before scoring: what `scoreTurns` needs besides the weights. */
export interface TurnCandidates {
  readonly evidence: TurnEvidence;
  readonly rows: EpisodeSearchRow[];
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
 * What a query's vector is made from: its content words, as the full-text index reads them ("what
 * activities does Melanie partake in?" -> "activities melanie partake"). USE-lite embeds a
 * question's form ("what ... does ... in?") with its topic, and a question's form is shared by
 * every question but by no turn that answers it; measured on LoCoMo with the weights chosen by
 * cross-validation, the content words find more of the evidence (docs/retrieval.md).
 */
export function embeddingText(query: string): string {
  return queryTerms(query).join(' ') || query;
}

/**
 * Vector candidates whose cosine must be exact; the rest of the candidates may carry the index's
 * estimate (~0.01 off: a 0.0025 change of a score weighted 0.25), which spares the sqlite-vec
 * index ~4 ms of re-ranking per search at 100,000 vectors. The few best by meaning stay exact.
 */
const EXACT_VECTOR_TOP = 50;

/**
 * A faded memory that passed only because deep recall asked for faded ones: it must share a word
 * with the query (see {@link MemoryQuery.includeFaded}); a temporal listing has no words to share.
 */
function recalledOnly(query: MemoryQuery, m: MemoryWithSources): boolean {
  return !query.includeInactive && isFaded(m);
}

export function createHybridSearch(deps: HybridSearchDeps): InspectableSearch {
  const weights: SearchWeights = { ...DEFAULT_WEIGHTS, ...deps.weights };
  const candidateCount = deps.candidates ?? 300;
  const keywordCandidateCount = deps.keywordCandidates ?? 1000;
  const keywordPoolSize = deps.keywordPool ?? 200;
  const radius = deps.contextRadius ?? 2;
  const clock = deps.clock ?? (() => new Date());
  const log = deps.logger.child({ component: 'search' });
  const topicFilter = (query: MemoryQuery, ids: readonly string[]) => tagFilter(deps.prisma, query, ids);

  async function queryVector(text: string, notes: string[]): Promise<Float32Array | undefined> {
    if (!deps.embedder || !deps.index || !deps.guard) {
      notes.push('vector search is not configured');
      return undefined;
    }
    const state = deps.guard.state();
    if (state.status === 'mismatch') {
      notes.push(
        `vector search is off: the index holds ${state.stored.embedder} vectors but the embedder is ${state.configured.embedder}; run \`npm run cli -- reindex\``,
      );
      return undefined;
    }
    if (state.status === 'unavailable') {
      notes.push('vector search is off: the vector index is unavailable; keyword search only');
      void deps.guard.ensure().catch(() => undefined);
      return undefined;
    }
    try {
      return (await deps.embedder.embed([embeddingText(text)]))[0];
    } catch (error) {
      log.warn('query embedding failed; searching without vectors', { error });
      notes.push('vector search failed for this query (embedder unavailable)');
      return undefined;
    }
  }

  async function vectorHits(query: MemoryQuery, vector: Float32Array | undefined, kind: ResultKind, notes: string[]): Promise<VectorHit[]> {
    if (!vector || !deps.index) return [];
    try {
      return await deps.index.search({ scopeId: query.scopeId, vector, limit: candidateCount, kind, exactTop: EXACT_VECTOR_TOP });
    } catch (error) {
      log.warn('vector index search failed; searching without vectors', { error });
      notes.push('vector index unavailable for this query');
      return [];
    }
  }

  /**
   * A query's episode candidates and what the indexes said about them (independent of the
   * weights): the vector candidates, the full-text hits with their per-word scores, and the rows
   * of the vector candidates and of the best full-text candidates.
   */
  async function gatherTurns(query: MemoryQuery, text: string, vector: Promise<Float32Array | undefined>, now: Date, notes: string[]): Promise<TurnCandidates> {
    const useKeyword = query.strategy !== 'semantic';
    const useVector = query.strategy !== 'keyword';
    // The keyword side (full-text query, then its rows) runs while the query is being embedded on
    // the embedder's thread; the vector side starts when the vector arrives.
    const keywordSide = (async () => {
      // Scored word by word: the sum is the turn's BM25, and the per-word scores give the passage coverage.
      const termHits = useKeyword
        ? await deps.fullText.searchTerms({ scopeId: query.scopeId, kind: 'episode', query: text, limit: keywordCandidateCount })
        : { terms: [], hits: [] };
      const kw = termHits.hits.map(({ id, scores }) => ({ id, score: scores.reduce((a, b) => a + b, 0) }));
      // Rows are read for the best keyword candidates only (the per-word lists of a long query add
      // up to thousands of ids in a large scope); every hit keeps its score for neighbours.
      const pool = kw.length <= keywordPoolSize ? kw : [...kw].sort((a, b) => b.score - a.score).slice(0, keywordPoolSize);
      const rows =
        pool.length > 0
          ? await deps.episodes.searchRows(
              query.scopeId,
              pool.map((h) => h.id),
            )
          : [];
      return { termHits, kw, rows };
    })();
    const vectorSide = (async () => (useVector ? vectorHits(query, await vector, 'episode', notes) : []))();
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

  async function scoreEpisodes(query: MemoryQuery, text: string, vector: Promise<Float32Array | undefined>, now: Date, notes: string[]): Promise<Scored[]> {
    const { evidence, rows } = await gatherTurns(query, text, vector, now, notes);
    const tagged = await topicFilter(
      query,
      rows.map((e) => e.id),
    );
    const scored = await scoreTurns({ evidence, rows, weights, radius, atTurns: (positions) => deps.episodes.atTurns(query.scopeId, positions) });
    const taggedAll = tagged ? await topicFilter(query, [...scored.keys()]) : undefined;
    return [...scored.values()].filter((s) => episodePasses(query, s.episode!, taggedAll));
  }

  async function scoreMemories(query: MemoryQuery, text: string, vector: Promise<Float32Array | undefined>, now: Date, notes: string[]): Promise<Scored[]> {
    // A scope without memories (yet) skips both indexes: their word lists span every scope.
    if ((await deps.prisma.memory.count({ where: { scopeId: query.scopeId } })) === 0) return [];
    const useKeyword = query.strategy !== 'semantic';
    const useVector = query.strategy !== 'keyword';
    const [kw, vec] = await Promise.all([
      useKeyword ? deps.fullText.search({ scopeId: query.scopeId, kind: 'memory', query: text, limit: candidateCount }) : Promise.resolve([]),
      useVector ? vector.then((v) => vectorHits(query, v, 'memory', notes)) : Promise.resolve([]),
    ]);
    const kwScore = normalizedScores(kw);
    const semScore = normalizedScores(vec);
    const rows = await deps.memories.getMany(query.scopeId, [...new Set([...kwScore.keys(), ...semScore.keys()])]);
    return rows
      .filter((m) => memoryPasses(query, m) && (!recalledOnly(query, m) || kwScore.has(m.id)))
      .map((m) => {
        const parts: ScoreParts = {
          semantic: semScore.get(m.id) ?? 0,
          keyword: kwScore.get(m.id) ?? 0,
          recency: recencyOf(m.lastReinforcedAt, now),
          importance: m.importance,
          confidence: m.confidence,
        };
        const score =
          weights.semantic * parts.semantic! +
          weights.keyword * parts.keyword! +
          weights.recency * parts.recency! +
          weights.importance * parts.importance! +
          weights.confidence * parts.confidence!;
        return { kind: 'memory' as const, id: m.id, base: score, parts, memory: m };
      });
  }

  async function temporal(query: MemoryQuery, now: Date, kinds: ResultKind[], limit: number): Promise<Scored[]> {
    const out: Scored[] = [];
    const range = { gte: query.timeRange?.start, lte: query.timeRange?.end };
    if (kinds.includes('episode')) {
      const rows = await deps.prisma.episode.findMany({
        where: {
          scopeId: query.scopeId,
          timestamp: range,
          channel: query.channel,
          importance: query.minImportance === undefined ? undefined : { gte: query.minImportance },
        },
        orderBy: [{ timestamp: 'desc' }, { id: 'desc' }],
        take: limit * 4,
      });
      const tagged = await topicFilter(
        query,
        rows.map((r) => r.id),
      );
      for (const e of rows)
        if (episodePasses(query, e, tagged))
          out.push({ kind: 'episode', id: e.id, base: recencyOf(e.timestamp, now), parts: { recency: recencyOf(e.timestamp, now) }, episode: e });
    }
    if (kinds.includes('memory')) {
      const ids = await deps.prisma.memory.findMany({
        where: { scopeId: query.scopeId, validFrom: range },
        orderBy: { validFrom: 'desc' },
        take: limit * 4,
        select: { id: true },
      });
      for (const m of await deps.memories.getMany(
        query.scopeId,
        ids.map((r) => r.id),
      )) {
        if (memoryPasses(query, m) && !recalledOnly(query, m))
          out.push({ kind: 'memory', id: m.id, base: recencyOf(m.validFrom, now), parts: { recency: recencyOf(m.validFrom, now) }, memory: m });
      }
    }
    return out;
  }

  function toResult(s: Scored): SearchResult {
    const parts = Object.fromEntries(Object.entries(s.parts).map(([k, v]) => [k, round(v as number)])) as ScoreParts;
    if (s.episode) {
      const e = s.episode;
      return {
        kind: 'episode',
        id: e.id,
        externalId: e.externalId,
        content: e.content,
        timestamp: e.timestamp,
        score: round(s.base),
        parts,
        conversationId: e.conversationId,
        role: e.role,
        author: e.author,
      };
    }
    const m = s.memory!;
    return {
      kind: 'memory',
      id: m.id,
      externalId: null,
      content: m.content,
      timestamp: m.validFrom,
      score: round(s.base),
      parts,
      category: m.category,
      confidence: m.confidence,
      ...(isFaded(m) && { faded: true }),
      sourceEpisodes: m.sources.map((src) => ({ id: src.episodeId, externalId: src.episode.externalId })),
    };
  }

  return {
    weights,
    radius,
    async turnCandidates(query) {
      const text = query.semanticQuery?.trim() ?? '';
      if (text === '') throw new ValidationError('a hybrid search needs a query text', { code: 'search.no_query' });
      const notes: string[] = [];
      return gatherTurns({ ...query, strategy: 'hybrid' }, text, queryVector(text, notes), query.now ?? clock(), notes);
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
        scored = await temporal(query, now, kinds, limit);
      } else {
        // Not awaited here: the keyword side of each kind runs while the query is embedded.
        const vector = strategy === 'keyword' ? Promise.resolve(undefined) : queryVector(text, notes);
        const [episodes, memories] = await Promise.all([
          kinds.includes('episode') ? scoreEpisodes({ ...query, strategy }, text, vector, now, notes) : Promise.resolve([]),
          kinds.includes('memory') ? scoreMemories({ ...query, strategy }, text, vector, now, notes) : Promise.resolve([]),
        ]);
        scored = [...episodes, ...memories];
      }
      scored = await rankKnowledgeFirst(deps.prisma, query.scopeId, scored);
      scored.sort((a, b) => b.base - a.base || a.id.localeCompare(b.id));
      return { results: scored.slice(0, limit).map(toResult), notes: [...new Set(notes)] };
    },
  };
}
