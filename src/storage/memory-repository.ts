/**
 * Consolidated memories: the read side the retrieval layer needs. The sleep worker adds the
 * write side (create, reinforce, update, contradict, decay) with its audit trail.
 */
import type { Memory, PrismaClient } from './prisma';

export interface MemoryWithSources extends Memory {
  readonly sources: ReadonlyArray<{ episodeId: string; episode: { externalId: string | null } }>;
}

export interface MemoryRepository {
  /** Memories of one scope with these ids, with their source episodes. */
  getMany(scopeId: string, ids: readonly string[]): Promise<MemoryWithSources[]>;
  /** Active memories of a scope, most confident first. */
  listActive(scopeId: string, params?: { minConfidence?: number; limit?: number }): Promise<MemoryWithSources[]>;
}

const withSources = { sources: { select: { episodeId: true, episode: { select: { externalId: true } } } } } as const;

export function createMemoryRepository(prisma: PrismaClient): MemoryRepository {
  return {
    getMany: (scopeId, ids) => prisma.memory.findMany({ where: { scopeId, id: { in: [...ids] } }, include: withSources }),
    listActive: (scopeId, params = {}) =>
      prisma.memory.findMany({
        where: { scopeId, active: true, confidence: { gte: params.minConfidence ?? 0 } },
        orderBy: [{ confidence: 'desc' }, { lastReinforcedAt: 'desc' }],
        take: params.limit ?? 100,
        include: withSources,
      }),
  };
}
