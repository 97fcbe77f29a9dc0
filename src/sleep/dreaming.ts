/**
 * The dreaming phase's link work (seed 003, A-MEM style): each memory not yet looked at is
 * compared with the scope's other memories and linked to those at cosine similarity >= 0.7;
 * links whose other end faded or was superseded are pruned (orphans). History links
 * (supersedes, contradicts) are never pruned.
 */
import { linkMemories, type ChangeOrigin } from '../memory/memories/memory-writer';
import type { Embedder } from '../memory/embeddings/embedder';
import type { VectorIndex } from '../memory/vectors/vector-index';
import type { PrismaClient } from '../storage/prisma';

export const LINK_SIMILARITY = 0.7;
const HISTORY_KINDS = ['supersedes', 'contradicts'];

export interface LinkResult {
  readonly examined: number;
  readonly linked: number;
  readonly pruned: number;
}

export async function linkSimilarMemories(
  deps: { prisma: PrismaClient; embedder: Embedder; index: VectorIndex },
  scopeId: string,
  origin: ChangeOrigin,
  options: { batch?: number; neighbours?: number } = {},
): Promise<LinkResult> {
  const { prisma } = deps;
  const fresh = await prisma.memory.findMany({
    where: { scopeId, active: true, validTo: null, linkedAt: null },
    orderBy: { createdAt: 'asc' },
    take: options.batch ?? 50,
    select: { id: true, content: true },
  });
  let linked = 0;
  if (fresh.length > 0) {
    const vectors = await deps.embedder.embed(fresh.map((m) => m.content));
    for (const [i, memory] of fresh.entries()) {
      const hits = await deps.index.search({ scopeId, vector: vectors[i] as Float32Array, limit: (options.neighbours ?? 5) + 1, kind: 'memory' });
      const close = hits.filter((h) => h.id !== memory.id && h.score >= LINK_SIMILARITY);
      const current = close.length === 0 ? [] : await prisma.memory.findMany({ where: { scopeId, id: { in: close.map((h) => h.id) }, active: true, validTo: null }, select: { id: true } });
      const alive = new Set(current.map((c) => c.id));
      await prisma.$transaction(async (tx) => {
        for (const hit of close) {
          if (alive.has(hit.id) && (await linkMemories(tx, scopeId, memory.id, hit.id, 'related', Math.round(hit.score * 1000) / 1000, { ...origin, reason: `similar (${hit.score.toFixed(2)})` }))) linked++;
        }
        await tx.memory.updateMany({ where: { scopeId, id: memory.id }, data: { linkedAt: origin.now } });
      });
    }
  }
  const pruned = await pruneOrphanLinks(prisma, scopeId);
  return { examined: fresh.length, linked, pruned };
}

/** Removes association links with a faded or superseded end; returns how many. */
export async function pruneOrphanLinks(prisma: PrismaClient, scopeId: string): Promise<number> {
  const orphans = await prisma.memoryLink.findMany({
    where: {
      scopeId,
      kind: { notIn: HISTORY_KINDS },
      OR: [{ from: { OR: [{ active: false }, { validTo: { not: null } }] } }, { to: { OR: [{ active: false }, { validTo: { not: null } }] } }],
    },
    select: { id: true },
  });
  if (orphans.length === 0) return 0;
  const { count } = await prisma.memoryLink.deleteMany({ where: { scopeId, id: { in: orphans.map((o) => o.id) } } });
  return count;
}
