/**
 * The dreaming phase's link work (seed 003, A-MEM style): each memory not yet looked at is
 * compared with the scope's other memories and linked to those at cosine similarity >= 0.7;
 * links whose other end faded or was superseded are pruned (orphans). History links
 * (supersedes, contradicts) are never pruned.
 *
 * Before linking, the merge pass folds current memories that restate each other (written before
 * the writer's restatement rule, or missed by it because their vectors did not exist yet): the
 * same rule as every write (restatements.ts), the weaker folded into the stronger.
 */
import { linkMemories, mergeMemories, type ChangeOrigin } from '../memory/memories/memory-writer';
import { dot, type Embedder } from '../memory/embeddings/embedder';
import { compatibleCategories, isRestatement } from '../memory/memories/restatements';
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
      const current =
        close.length === 0
          ? []
          : await prisma.memory.findMany({ where: { scopeId, id: { in: close.map((h) => h.id) }, active: true, validTo: null }, select: { id: true } });
      const alive = new Set(current.map((c) => c.id));
      await prisma.$transaction(async (tx) => {
        for (const hit of close) {
          if (
            alive.has(hit.id) &&
            (await linkMemories(tx, scopeId, memory.id, hit.id, 'related', Math.round(hit.score * 1000) / 1000, {
              ...origin,
              reason: `similar (${hit.score.toFixed(2)})`,
            }))
          )
            linked++;
        }
        await tx.memory.updateMany({ where: { scopeId, id: memory.id }, data: { linkedAt: origin.now } });
      });
    }
  }
  const pruned = await pruneOrphanLinks(prisma, scopeId);
  return { examined: fresh.length, linked, pruned };
}

/** Current memories compared per merge pass (pairwise, in memory: 300 x 300 dot products is quick). */
export const MERGE_BATCH = 300;

/** Which of two memories that say the same is kept: more confident, then more confirmed, then older. */
function stronger<T extends { confidence: number; reinforcementCount: number; createdAt: Date }>(a: T, b: T): boolean {
  if (a.confidence !== b.confidence) return a.confidence > b.confidence;
  if (a.reinforcementCount !== b.reinforcementCount) return a.reinforcementCount > b.reinforcementCount;
  return a.createdAt <= b.createdAt;
}

/**
 * Folds the scope's current memories that restate each other: each pair that passes the
 * restatement rule (cosine and words, restatements.ts) leaves the stronger one, which takes the
 * weaker's evidence and confirmations; the weaker is superseded by it (history kept, audited as
 * `merge`). Returns how many were folded.
 */
export async function mergeRestatements(deps: { prisma: PrismaClient; embedder: Embedder }, scopeId: string, origin: ChangeOrigin): Promise<number> {
  const { prisma } = deps;
  const rows = await prisma.memory.findMany({
    where: { scopeId, active: true, validTo: null },
    orderBy: { lastReinforcedAt: 'desc' },
    take: MERGE_BATCH,
    select: { id: true, content: true, category: true, confidence: true, reinforcementCount: true, createdAt: true },
  });
  if (rows.length < 2) return 0;
  const vectors = await deps.embedder.embed(rows.map((r) => r.content));
  const gone = new Set<string>();
  let merged = 0;
  for (let i = 0; i < rows.length; i++) {
    for (let j = i + 1; j < rows.length && !gone.has(rows[i]!.id); j++) {
      const a = rows[i]!;
      const b = rows[j]!;
      if (gone.has(b.id) || !compatibleCategories(a.category, b.category)) continue;
      const cosine = dot(vectors[i]!, vectors[j]!);
      if (!isRestatement(a.content, b.content, cosine) || !isRestatement(b.content, a.content, cosine)) continue;
      const [keep, fold] = stronger(a, b) ? [a, b] : [b, a];
      await prisma.$transaction((tx) =>
        mergeMemories(tx, scopeId, fold.id, keep.id, { ...origin, reason: `restates memory ${keep.id} (cosine ${cosine.toFixed(2)})` }),
      );
      gone.add(fold.id);
      Object.assign(keep, { reinforcementCount: keep.reinforcementCount + fold.reinforcementCount, confidence: Math.max(keep.confidence, fold.confidence) });
      merged++;
    }
  }
  return merged;
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
