/**
 * The memory side of hybrid search: a scope's memories found by keywords and by meaning, scored by
 * the weighted parts memories have (semantic, keyword, recency, importance, confidence).
 */
import type { FullTextIndex } from '../../storage/full-text';
import type { MemoryRepository, MemoryWithSources } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { MemoryQuery, ScoreParts } from './memory-query';
import { isFaded, memoryPasses } from './search-filters';
import { normalizedScores, recencyOf, type Scored, type SearchWeights } from './search-scoring';
import type { VectorSide } from './search-vectors';

/**
 * A faded memory that passed only because deep recall asked for faded ones: it must share a word
 * with the query (see {@link MemoryQuery.includeFaded}); a temporal listing has no words to share.
 */
export function recalledOnly(query: MemoryQuery, m: MemoryWithSources): boolean {
  return !query.includeInactive && isFaded(m);
}

/** What the memory side reads and how it scores. */
export interface MemorySideDeps {
  readonly prisma: PrismaClient;
  readonly memories: MemoryRepository;
  readonly fullText: FullTextIndex;
  readonly vectors: VectorSide;
  readonly weights: SearchWeights;
  /** Candidates taken from each index. */
  readonly candidates: number;
}

/** The scored memories of one search that pass its filters. */
export async function scoreMemories(
  deps: MemorySideDeps,
  input: { query: MemoryQuery; text: string; vector: Promise<Float32Array | undefined>; now: Date; notes: string[] },
): Promise<Scored[]> {
  const { query, text, vector, now, notes } = input;
  const { weights } = deps;
  // A scope without memories (yet) skips both indexes: their word lists span every scope.
  if ((await deps.prisma.memory.count({ where: { scopeId: query.scopeId } })) === 0) return [];
  const useKeyword = query.strategy !== 'semantic';
  const useVector = query.strategy !== 'keyword';
  const [kw, vec] = await Promise.all([
    useKeyword ? deps.fullText.search({ scopeId: query.scopeId, kind: 'memory', query: text, limit: deps.candidates }) : Promise.resolve([]),
    useVector ? vector.then((v) => deps.vectors.hits(query, v, 'memory', notes)) : Promise.resolve([]),
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
