/**
 * Deleting the vectors of forgotten rows, crash-safe: the forgetting transaction writes a
 * tombstone per removed row; `flushTombstones` deletes those vectors from the index and then the
 * tombstones. Run right after forgetting and by the embedding worker on every pass, so vectors
 * left behind by a crash or an unreachable index are removed as soon as the index answers.
 */
import type { Prisma, PrismaClient } from '../../storage/prisma';
import type { VectorIndex, VectorKind } from './vector-index';

export async function writeTombstones(tx: Prisma.TransactionClient, scopeId: string, kind: VectorKind, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.vectorTombstone.createMany({ data: ids.map((id) => ({ id, scopeId, kind })) });
}

/** Deletes up to `limit` tombstoned vectors; returns how many. Throws if the index fails. */
export async function flushTombstones(prisma: PrismaClient, index: VectorIndex, limit = 500): Promise<number> {
  const rows = await prisma.vectorTombstone.findMany({ orderBy: { createdAt: 'asc' }, take: limit });
  if (rows.length === 0) return 0;
  const byScope = new Map<string, string[]>();
  for (const row of rows) byScope.set(row.scopeId, [...(byScope.get(row.scopeId) ?? []), row.id]);
  for (const [scopeId, ids] of byScope) await index.delete(scopeId, ids);
  await prisma.vectorTombstone.deleteMany({ where: { id: { in: rows.map((r) => r.id) } } });
  return rows.length;
}

/** Tombstones still waiting (the index was unreachable). */
export function pendingTombstones(prisma: PrismaClient, scopeId?: string): Promise<number> {
  return prisma.vectorTombstone.count({ where: scopeId ? { scopeId } : undefined });
}
