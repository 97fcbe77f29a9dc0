/**
 * Hybrid search over a scope's episodes and memories (seed 000 "Retrieval methods", seed 004
 * "Retrieval"): candidates from the vector index and the full-text index, scored by a weighted
 * sum of semantic similarity, BM25, recency, importance and (memories) confidence. Episodes
 * also get: context (the best neighbouring turn's relevance), passage (keyword coverage of the
 * turn with its neighbours), session (how well their conversation matches), time (closeness to
 * a date the query names), speaker (the author is named in the query) and substance (a prior
 * against near-empty turns). Every result carries the parts that made its score; the figures
 * behind the weights are in docs/retrieval.md.
 *
 * Scoping: every store call names the scope; ids that come back are re-read from the database
 * with the scope in the query, so nothing of another scope can leak through any path.
 */
import type { Logger } from '../../shared/logger';
import { ValidationError } from '../../shared/errors';
import type { EpisodeRepository, EpisodeSearchRow } from '../../storage/episode-repository';
import { queryTerms, type FullTextIndex, type KeywordHit } from '../../storage/full-text';
import type { MemoryRepository, MemoryWithSources } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { Embedder } from '../embeddings/embedder';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorHit, VectorIndex } from '../vectors/vector-index';
import type { MemoryQuery, ResultKind, ScoreParts, SearchResult } from './memory-query';

/** Weights of the score parts. Documented in docs/retrieval.md with the figures they give. */
export interface SearchWeights {
  readonly semantic: number;
  readonly keyword: number;
  readonly recency: number;
  readonly importance: number;
  readonly confidence: number;
  /** Share of the best neighbouring turn's relevance an episode receives. */
  readonly context: number;
  /** Closeness to a date the query names (see {@link datesInQuery}). */
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

export const DEFAULT_WEIGHTS: SearchWeights = {
  semantic: 0.25,
  keyword: 0.5,
  recency: 0.03,
  importance: 0.03,
  confidence: 0.1,
  context: 0.6,
  time: 0.5,
  session: 0.4,
  speaker: 0.1,
  passage: 0.2,
  substance: 0.1,
};

/** Recency half-life: a month-old item counts half as recent as one from today. */
const RECENCY_HALF_LIFE_DAYS = 30;
/** Words from which a turn counts as fully substantial (a median chat turn has about 20). */
const SUBSTANTIAL_WORDS = 20;
/** An item three days from a date the query names counts half as close as one on that date. */
const TIME_HALF_LIFE_DAYS = 3;
const DAY_MS = 86_400_000;

/** A calendar interval named in a query, [start, end) in UTC. */
export interface DateInterval {
  readonly start: Date;
  readonly end: Date;
}

const MONTH = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const MONTH_PREFIXES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const monthOf = (name: string) => MONTH_PREFIXES.indexOf(name.slice(0, 3).toLowerCase());

/** Most specific first: a span taken by one pattern is not read again by a later one. */
const DATE_PATTERNS: ReadonlyArray<{ pattern: RegExp; read: (m: RegExpExecArray) => { year: number; month?: number; day?: number } }> = [
  { pattern: new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH},?\\s+(\\d{4})\\b`, 'gi'), read: (m) => ({ year: Number(m[3]), month: monthOf(m[2]!), day: Number(m[1]) }) },
  { pattern: new RegExp(`\\b${MONTH}\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s*(\\d{4})\\b`, 'gi'), read: (m) => ({ year: Number(m[3]), month: monthOf(m[1]!), day: Number(m[2]) }) },
  { pattern: new RegExp(`\\b${MONTH},?\\s+(\\d{4})\\b`, 'gi'), read: (m) => ({ year: Number(m[2]), month: monthOf(m[1]!) }) },
  { pattern: /\b(?:in|of|during|by)\s+(\d{4})\b/gi, read: (m) => ({ year: Number(m[1]) }) },
];

/**
 * The absolute dates a query names ("on 8 May, 2023", "July 10, 2022", "in August 2023",
 * "in 2024") as calendar intervals. A question about a dated event is best answered by what was
 * said around that date, which neither BM25 (digits and month names match little) nor the
 * embedding sees. Relative dates ("last week") are left alone: they need the asker's "now".
 */
export function datesInQuery(text: string): DateInterval[] {
  const out: DateInterval[] = [];
  const taken: Array<[number, number]> = [];
  for (const { pattern, read } of DATE_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const from = m.index ?? 0;
      const to = from + m[0].length;
      if (taken.some(([a, b]) => a < to && from < b)) continue;
      taken.push([from, to]);
      const { year, month, day } = read(m as RegExpExecArray);
      // An impossible date ("31 February") names no day; its month is not read from it either.
      if (month !== undefined && month < 0) continue;
      if (day !== undefined && (day < 1 || day > new Date(Date.UTC(year, month! + 1, 0)).getUTCDate())) continue;
      const start = new Date(Date.UTC(year, month ?? 0, day ?? 1));
      const end = day !== undefined ? new Date(Date.UTC(year, month!, day + 1)) : month !== undefined ? new Date(Date.UTC(year, month + 1, 1)) : new Date(Date.UTC(year + 1, 0, 1));
      out.push({ start, end });
    }
  }
  return out;
}

/** 1 inside one of the intervals, halving every {@link TIME_HALF_LIFE_DAYS} days outside. */
function closenessTo(intervals: readonly DateInterval[], time: Date): number {
  let best = 0;
  for (const { start, end } of intervals) {
    const days = Math.max(0, start.getTime() - time.getTime(), time.getTime() - end.getTime()) / DAY_MS;
    best = Math.max(best, 0.5 ** (days / TIME_HALF_LIFE_DAYS));
  }
  return best;
}

export interface SearchOutcome {
  readonly results: SearchResult[];
  /** Why a part of the search was left out (vector index unavailable, embedder changed, ...). */
  readonly notes: string[];
}

export interface HybridSearch {
  search(query: MemoryQuery): Promise<SearchOutcome>;
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

interface Scored {
  kind: ResultKind;
  id: string;
  base: number;
  parts: ScoreParts;
  episode?: EpisodeSearchRow;
  memory?: MemoryWithSources;
}

/**
 * Vector candidates whose cosine must be exact; the rest of the candidates may carry the index's
 * estimate (~0.01 off: a 0.0025 change of a score weighted 0.25), which spares the sqlite-vec
 * index ~4 ms of re-ranking per search at 100,000 vectors. The few best by meaning stay exact.
 */
const EXACT_VECTOR_TOP = 50;

function recencyOf(time: Date, now: Date): number {
  const ageDays = Math.max(0, (now.getTime() - time.getTime()) / DAY_MS);
  return 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}

/** Scales hit scores into 0-1 by the best one (keeps their ratios). */
function normalizedScores(hits: ReadonlyArray<KeywordHit | VectorHit>): Map<string, number> {
  const max = hits.reduce((m, h) => Math.max(m, h.score), 0);
  return new Map(hits.map((h) => [h.id, max > 0 ? Math.max(0, h.score) / max : 0]));
}

/**
 * Whether an author is named in the query ("what did Melanie paint?" names the author Melanie,
 * or "Mel" for "Melanie Smith"'s first name): a question about a person is most often answered
 * by what that person said. Every word of the author's name counts.
 */
function namedIn(queryWords: ReadonlySet<string>, author: string): boolean {
  return queryTerms(author).some((word) => queryWords.has(word));
}

function wordCount(text: string): number {
  return text.match(/[\p{L}\p{N}]+/gu)?.length ?? 0;
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

export function createHybridSearch(deps: HybridSearchDeps): HybridSearch {
  const weights: SearchWeights = { ...DEFAULT_WEIGHTS, ...deps.weights };
  const candidateCount = deps.candidates ?? 300;
  const keywordCandidateCount = deps.keywordCandidates ?? 1000;
  const keywordPoolSize = deps.keywordPool ?? 200;
  const radius = deps.contextRadius ?? 2;
  const clock = deps.clock ?? (() => new Date());
  const log = deps.logger.child({ component: 'search' });

  async function queryVector(text: string, notes: string[]): Promise<Float32Array | undefined> {
    if (!deps.embedder || !deps.index || !deps.guard) {
      notes.push('vector search is not configured');
      return undefined;
    }
    const state = deps.guard.state();
    if (state.status === 'mismatch') {
      notes.push(`vector search is off: the index holds ${state.stored.embedder} vectors but the embedder is ${state.configured.embedder}; run \`npm run cli -- reindex\``);
      return undefined;
    }
    if (state.status === 'unavailable') {
      notes.push('vector search is off: the vector index is unavailable; keyword search only');
      void deps.guard.ensure().catch(() => undefined);
      return undefined;
    }
    try {
      return (await deps.embedder.embed([text]))[0];
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

  async function topicFilter(query: MemoryQuery, ids: readonly string[]): Promise<Set<string> | undefined> {
    const tags = [...(query.topics ?? []).map((v) => ({ kind: 'topic', value: v.toLowerCase().trim() })), ...(query.entities ?? []).map((v) => ({ kind: 'entity', value: v.toLowerCase().trim() }))];
    if (tags.length === 0) return undefined;
    const rows = await deps.prisma.episodeTag.findMany({
      where: { scopeId: query.scopeId, episodeId: { in: [...ids] }, OR: tags },
      select: { episodeId: true },
    });
    return new Set(rows.map((r) => r.episodeId));
  }

  function episodePasses(query: MemoryQuery, e: EpisodeSearchRow, tagged: Set<string> | undefined): boolean {
    if (query.channel && e.channel !== query.channel) return false;
    if (query.minImportance !== undefined && e.importance < query.minImportance) return false;
    if (query.timeRange?.start && e.timestamp < query.timeRange.start) return false;
    if (query.timeRange?.end && e.timestamp > query.timeRange.end) return false;
    if (tagged && !tagged.has(e.id)) return false;
    return true;
  }

  function memoryPasses(query: MemoryQuery, m: MemoryWithSources): boolean {
    if (!query.includeInactive && !m.active) return false;
    if (query.minConfidence !== undefined && m.confidence < query.minConfidence) return false;
    if (query.minSourceTrust !== undefined && m.sourceTrust < query.minSourceTrust) return false;
    if (query.minImportance !== undefined && m.importance < query.minImportance) return false;
    if (query.timeRange?.start && m.validFrom < query.timeRange.start) return false;
    if (query.timeRange?.end && m.validFrom > query.timeRange.end) return false;
    return true;
  }

  async function scoreEpisodes(query: MemoryQuery, text: string, vector: Promise<Float32Array | undefined>, now: Date, notes: string[]): Promise<Scored[]> {
    const useKeyword = query.strategy !== 'semantic';
    const useVector = query.strategy !== 'keyword';
    // The keyword side (full-text query, then its rows) runs while the query is being embedded on
    // the embedder's thread; the vector side starts when the vector arrives.
    const keywordSide = (async () => {
      // Scored word by word: the sum is the turn's BM25, and the per-word scores give the passage coverage.
      const termHits = useKeyword ? await deps.fullText.searchTerms({ scopeId: query.scopeId, kind: 'episode', query: text, limit: keywordCandidateCount }) : { terms: [], hits: [] };
      const kw = termHits.hits.map(({ id, scores }) => ({ id, score: scores.reduce((a, b) => a + b, 0) }));
      // Rows are read for the best keyword candidates only (the per-word lists of a long query add
      // up to thousands of ids in a large scope); every hit keeps its score for neighbours.
      const pool = kw.length <= keywordPoolSize ? kw : [...kw].sort((a, b) => b.score - a.score).slice(0, keywordPoolSize);
      const rows = pool.length > 0 ? await deps.episodes.searchRows(query.scopeId, pool.map((h) => h.id)) : [];
      return { termHits, kw, rows };
    })();
    const vectorSide = (async () => (useVector ? vectorHits(query, await vector, 'episode', notes) : []))();
    const [{ termHits, kw, rows: keywordRows }, vec] = await Promise.all([keywordSide, vectorSide]);
    const terms = termHits.terms;
    const termScores = new Map(termHits.hits.map((hit) => [hit.id, hit.scores]));
    const kwScore = normalizedScores(kw);
    const semScore = normalizedScores(vec);
    const dates = weights.time > 0 ? datesInQuery(text) : [];
    const queryWords = new Set(queryTerms(text));
    const read = new Set(keywordRows.map((e) => e.id));
    const vectorOnly = [...semScore.keys()].filter((id) => !read.has(id));
    const rows = vectorOnly.length > 0 ? [...keywordRows, ...(await deps.episodes.searchRows(query.scopeId, vectorOnly))] : keywordRows;
    const tagged = await topicFilter(query, rows.map((e) => e.id));
    // What the query's words and meaning say about a turn itself; the only thing neighbours and
    // conversations lend (recency, importance and dates are the turn's own).
    const relevance = new Map<string, number>();
    const base = (e: EpisodeSearchRow): Scored => {
      const parts: ScoreParts = {
        semantic: semScore.get(e.id) ?? 0,
        keyword: kwScore.get(e.id) ?? 0,
        recency: recencyOf(e.timestamp, now),
        importance: e.importance,
      };
      if (dates.length > 0) parts.time = closenessTo(dates, e.timestamp);
      if (weights.speaker > 0 && e.author) parts.speaker = namedIn(queryWords, e.author) ? 1 : 0;
      if (weights.substance > 0) parts.substance = Math.min(1, wordCount(e.content) / SUBSTANTIAL_WORDS);
      const own = weights.semantic * parts.semantic! + weights.keyword * parts.keyword!;
      relevance.set(e.id, own);
      const score = own + weights.recency * parts.recency! + weights.importance * parts.importance! + weights.time * (parts.time ?? 0) + weights.speaker * (parts.speaker ?? 0) + weights.substance * (parts.substance ?? 0);
      return { kind: 'episode', id: e.id, base: score, parts, episode: e };
    };
    const scored = new Map(rows.map((e) => [e.id, base(e)]));

    // Neighbouring turns lend context: the best neighbour's relevance flows to each turn, and the
    // neighbours of the strongest candidates join the pool (the answer is often the next turn).
    if ((weights.context > 0 || weights.passage > 0) && radius > 0) {
      const byPosition = new Map<string, Scored>();
      const place = (s: Scored) => {
        if (s.episode?.conversationId && s.episode.turn !== null) byPosition.set(`${s.episode.conversationId}#${s.episode.turn}`, s);
      };
      for (const s of scored.values()) place(s);
      const missing: Array<{ conversationId: string; turn: number }> = [];
      for (const s of [...scored.values()].sort((a, b) => b.base - a.base).slice(0, 50)) {
        const e = s.episode!;
        if (!e.conversationId || e.turn === null) continue;
        for (let d = -radius; d <= radius; d++) {
          if (d !== 0 && e.turn + d >= 0 && !byPosition.has(`${e.conversationId}#${e.turn + d}`)) missing.push({ conversationId: e.conversationId, turn: e.turn + d });
        }
      }
      for (const row of missing.length > 0 ? await deps.episodes.atTurns(query.scopeId, missing) : []) {
        if (scored.has(row.id)) continue;
        const s = base(row);
        scored.set(row.id, s);
        place(s);
      }
      for (const s of weights.context > 0 ? scored.values() : []) {
        const e = s.episode!;
        if (!e.conversationId || e.turn === null) continue;
        let best = 0;
        for (let d = -radius; d <= radius; d++) {
          if (d === 0) continue;
          const neighbour = byPosition.get(`${e.conversationId}#${e.turn + d}`);
          if (neighbour) best = Math.max(best, relevance.get(neighbour.id) ?? 0);
        }
        s.parts.context = best;
      }
      for (const s of scored.values()) s.base += weights.context * (s.parts.context ?? 0);

      if (weights.passage > 0 && terms.length > 0) {
        const coverage = new Map<string, number>();
        for (const s of scored.values()) {
          const e = s.episode!;
          if (!e.conversationId || e.turn === null) continue;
          const best = new Array<number>(terms.length).fill(0);
          for (let d = -radius; d <= radius; d++) {
            const neighbour = byPosition.get(`${e.conversationId}#${e.turn + d}`);
            const scores = neighbour && termScores.get(neighbour.id);
            if (scores) scores.forEach((v, t) => (best[t] = Math.max(best[t]!, v)));
          }
          coverage.set(s.id, best.reduce((a, b) => a + b, 0));
        }
        const top = Math.max(0, ...coverage.values());
        for (const [id, value] of coverage) {
          const s = scored.get(id)!;
          s.parts.passage = top > 0 ? value / top : 0;
          s.base += weights.passage * s.parts.passage;
        }
      }
    }

    // Conversation-level relevance: a turn in the conversation that best matches the query is
    // more likely to be about the same thing than an equally scored turn elsewhere.
    if (weights.session > 0) {
      const bestOf = new Map<string, number>();
      for (const s of scored.values()) {
        const c = s.episode!.conversationId;
        if (c) bestOf.set(c, Math.max(bestOf.get(c) ?? 0, relevance.get(s.id) ?? 0));
      }
      const top = Math.max(0, ...bestOf.values());
      for (const s of scored.values()) {
        const c = s.episode!.conversationId;
        if (!c || top <= 0) continue;
        s.parts.session = bestOf.get(c)! / top;
        s.base += weights.session * s.parts.session;
      }
    }
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
    return rows.filter((m) => memoryPasses(query, m)).map((m) => {
      const parts: ScoreParts = {
        semantic: semScore.get(m.id) ?? 0,
        keyword: kwScore.get(m.id) ?? 0,
        recency: recencyOf(m.lastReinforcedAt, now),
        importance: m.importance,
        confidence: m.confidence,
      };
      const score = weights.semantic * parts.semantic! + weights.keyword * parts.keyword! + weights.recency * parts.recency! + weights.importance * parts.importance! + weights.confidence * parts.confidence!;
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
      const tagged = await topicFilter(query, rows.map((r) => r.id));
      for (const e of rows) if (episodePasses(query, e, tagged)) out.push({ kind: 'episode', id: e.id, base: recencyOf(e.timestamp, now), parts: { recency: recencyOf(e.timestamp, now) }, episode: e });
    }
    if (kinds.includes('memory')) {
      const ids = await deps.prisma.memory.findMany({ where: { scopeId: query.scopeId, validFrom: range }, orderBy: { validFrom: 'desc' }, take: limit * 4, select: { id: true } });
      for (const m of await deps.memories.getMany(query.scopeId, ids.map((r) => r.id))) {
        if (memoryPasses(query, m)) out.push({ kind: 'memory', id: m.id, base: recencyOf(m.validFrom, now), parts: { recency: recencyOf(m.validFrom, now) }, memory: m });
      }
    }
    return out;
  }

  function toResult(s: Scored): SearchResult {
    const parts = Object.fromEntries(Object.entries(s.parts).map(([k, v]) => [k, round(v as number)])) as ScoreParts;
    if (s.episode) {
      const e = s.episode;
      return { kind: 'episode', id: e.id, externalId: e.externalId, content: e.content, timestamp: e.timestamp, score: round(s.base), parts, conversationId: e.conversationId, role: e.role, author: e.author };
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
      sourceEpisodes: m.sources.map((src) => ({ id: src.episodeId, externalId: src.episode.externalId })),
    };
  }

  return {
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
      scored.sort((a, b) => b.base - a.base || a.id.localeCompare(b.id));
      return { results: scored.slice(0, limit).map(toResult), notes: [...new Set(notes)] };
    },
  };
}
