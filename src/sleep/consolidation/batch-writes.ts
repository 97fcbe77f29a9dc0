/**
 * What a consolidation batch writes outside its plan's transaction: one more attempt counted for
 * episodes whose answer could not be used (given up on at the cap, with an audit event), and the
 * vectors of the memories the plan created.
 */
import type { Embedder } from '../../memory/embeddings/embedder';
import { GAVE_UP_ACTION } from '../../memory/digests/digest';
import type { VectorIndex } from '../../memory/vectors/vector-index';
import type { Logger } from '../../shared/logger';
import type { PrismaClient } from '../../storage/prisma';

/** The consolidator's writes around a batch. */
export interface BatchWrites {
  /**
   * One more failed attempt for `ids`; those that reach the cap are given up on, with an audit
   * event counting them (the next digest says how many messages could not be learned from).
   */
  countAttempt(scopeId: string, ids: readonly string[], runId: string, now: Date): Promise<void>;
  /** The new memories' vectors; a failure is logged and left to the embedding worker. */
  writeVectors(scopeId: string, memoryIds: readonly string[]): Promise<void>;
}

export function createBatchWrites(deps: {
  readonly prisma: PrismaClient;
  readonly embedder?: Embedder;
  readonly index?: VectorIndex;
  readonly log: Logger;
  /** Episodes that failed this many times are left alone. */
  readonly maxAttempts: number;
}): BatchWrites {
  const { prisma, log, maxAttempts } = deps;
  return {
    async writeVectors(scopeId, memoryIds) {
      if (!deps.embedder || !deps.index || memoryIds.length === 0) return;
      try {
        const rows = await prisma.memory.findMany({ where: { scopeId, id: { in: [...memoryIds] } }, select: { id: true, content: true, updatedAt: true } });
        const vectors = await deps.embedder.embed(rows.map((r) => r.content));
        await deps.index.upsert(rows.map((r, i) => ({ id: r.id, kind: 'memory' as const, scopeId, vector: vectors[i] as Float32Array })));
        await prisma.$transaction(
          rows.map((r) => prisma.memory.updateMany({ where: { id: r.id, updatedAt: r.updatedAt }, data: { embeddedWith: deps.embedder!.name } })),
        );
      } catch (error) {
        // The rows are committed with an empty `embeddedWith`: the embedding worker backfills them.
        log.warn('could not write vectors of new memories now; the embedding worker will', { scopeId, error });
      }
    },

    async countAttempt(scopeId, ids, runId, now) {
      await prisma.episode.updateMany({ where: { scopeId, id: { in: [...ids] } }, data: { consolidationAttempts: { increment: 1 } } });
      const exhausted = await prisma.episode.findMany({
        where: { scopeId, id: { in: [...ids] }, consolidated: false, consolidationAttempts: maxAttempts },
        select: { id: true },
      });
      if (exhausted.length === 0) return;
      await prisma.auditEvent.create({
        data: {
          scopeId,
          runId,
          action: GAVE_UP_ACTION,
          subjectType: 'scope',
          subjectId: scopeId,
          createdAt: now,
          after: { episodes: exhausted.length, episodeIds: exhausted.map((e) => e.id) },
          reason: `no usable answer after ${maxAttempts} attempts; these messages are no longer consolidated`,
        },
      });
      log.warn('gave up consolidating episodes after too many attempts', { scopeId, runId, episodes: exhausted.length });
    },
  };
}
