/**
 * How a store migration (migrate-store.ts) brings a scope's vectors to the target. Decided once
 * per run: `shared` when the target uses the source's index (only the embedded-by marks are
 * copied), `copy` when the source index holds vectors of the configured embedder (read from it
 * and written to the target index, no re-embedding), else `re-embed` (the target rows stay
 * unmarked and the embedding worker of the service on the new store embeds them).
 */
import type { IndexIdentity, VectorIndex, VectorKind } from '../memory/vectors/vector-index';
import type { DatabaseProvider, PrismaClient } from '../storage/prisma';
import { compareStrings } from './scope-document';

/** One side of a migration: an opened database and (unless shared) its vector index, not yet initialized. */
export interface Store {
  readonly prisma: PrismaClient;
  readonly provider: DatabaseProvider;
  readonly index: VectorIndex | null;
}

/** How vectors reach the target. */
export type VectorPlan = 'shared' | 'copy' | 're-embed';

/** The two sides of a migration and the embedder whose vectors may be reused. */
export interface VectorMigrationParams {
  readonly source: Store;
  readonly target: Store;
  /** The configured embedder: vectors are reused only when the source index holds its vectors. */
  readonly embedder: IndexIdentity;
  /** The target uses the source's vector index (same file or server): marks are copied, not vectors. */
  readonly sharedIndex: boolean;
}

/** Vectors read from the source index and written to the target per call. */
const VECTOR_BATCH = 256;
/** Rows marked as embedded per statement. */
const BATCH = 500;

export async function decideVectorPlan(params: VectorMigrationParams): Promise<{ plan: VectorPlan; reason: string }> {
  const { source, target, embedder } = params;
  if (params.sharedIndex) return { plan: 'shared', reason: 'the target uses the same vector index as the source; vectors stay where they are' };
  if (!source.index) return { plan: 're-embed', reason: 'the source has no vector index; the embedding worker embeds every row on the target' };
  let stored: IndexIdentity | null;
  try {
    stored = await source.index.init();
  } catch (error) {
    return {
      plan: 're-embed',
      reason: `the source vector index cannot be read (${error instanceof Error ? error.message : String(error)}); rows are re-embedded on the target`,
    };
  }
  if (!stored || stored.embedder !== embedder.embedder || stored.dimension !== embedder.dimension) {
    return {
      plan: 're-embed',
      reason: `the source index holds ${stored ? `${stored.embedder} (${stored.dimension}-d)` : 'no'} vectors, the configured embedder is ${embedder.embedder}; rows are re-embedded on the target`,
    };
  }
  if (!target.index) return { plan: 're-embed', reason: 'no target vector index was given' };
  const current = await target.index.init();
  if (current === null) await target.index.setIdentity(embedder);
  else if (current.embedder !== embedder.embedder || current.dimension !== embedder.dimension) {
    return { plan: 're-embed', reason: `the target index holds ${current.embedder} vectors; it is rebuilt by a reindex on the target` };
  }
  return { plan: 'copy', reason: `vectors of ${embedder.embedder} are copied from the source index (no re-embedding)` };
}

/** Marks target rows as embedded without moving Memory.updatedAt (the copy must stay equal to the source). */
async function markEmbedded(prisma: PrismaClient, scopeId: string, kind: VectorKind, ids: readonly string[], embedderName: string): Promise<void> {
  if (ids.length === 0) return;
  if (kind === 'episode') {
    await prisma.episode.updateMany({ where: { scopeId, id: { in: [...ids] } }, data: { embeddedWith: embedderName } });
    return;
  }
  const rows = await prisma.memory.findMany({ where: { scopeId, id: { in: [...ids] } }, select: { id: true, updatedAt: true } });
  await prisma.$transaction(
    rows.map((row) => prisma.memory.updateMany({ where: { id: row.id }, data: { embeddedWith: embedderName, updatedAt: row.updatedAt } })),
  );
}

/** Embedded-by marks of one kind of row: id -> embedder name (null when not embedded). */
async function embeddedMarks(prisma: PrismaClient, scopeId: string, kind: VectorKind): Promise<Map<string, string | null>> {
  const select = { id: true, embeddedWith: true } as const;
  const rows =
    kind === 'episode' ? await prisma.episode.findMany({ where: { scopeId }, select }) : await prisma.memory.findMany({ where: { scopeId }, select });
  return new Map(rows.map((row) => [row.id, row.embeddedWith]));
}

/** Brings the target's vectors (or marks) of one scope in line with the source; returns rows reused. */
export async function carryVectors(params: VectorMigrationParams, plan: VectorPlan, scopeId: string): Promise<number> {
  if (plan === 're-embed') return 0;
  const { source, target, embedder } = params;
  let reused = 0;
  for (const kind of ['episode', 'memory'] as const) {
    const [sourceMarks, targetMarks] = await Promise.all([embeddedMarks(source.prisma, scopeId, kind), embeddedMarks(target.prisma, scopeId, kind)]);
    if (plan === 'shared') {
      // The index is the same: the target row is embedded exactly when the source row is.
      const byName = new Map<string, string[]>();
      for (const [id, name] of sourceMarks) {
        if (name === null || !targetMarks.has(id) || targetMarks.get(id) === name) continue;
        byName.set(name, [...(byName.get(name) ?? []), id]);
      }
      for (const [name, ids] of byName) {
        for (let start = 0; start < ids.length; start += BATCH) await markEmbedded(target.prisma, scopeId, kind, ids.slice(start, start + BATCH), name);
        reused += ids.length;
      }
      continue;
    }
    const wanted = [...sourceMarks]
      .filter(([id, name]) => name === embedder.embedder && targetMarks.has(id) && targetMarks.get(id) !== embedder.embedder)
      .map(([id]) => id)
      .sort(compareStrings);
    for (let start = 0; start < wanted.length; start += VECTOR_BATCH) {
      const records = (await source.index!.get(scopeId, wanted.slice(start, start + VECTOR_BATCH))).filter((r) => r.kind === kind);
      if (records.length === 0) continue;
      await target.index!.upsert(records);
      await markEmbedded(
        target.prisma,
        scopeId,
        kind,
        records.map((r) => r.id),
        embedder.embedder,
      );
      reused += records.length;
    }
  }
  return reused;
}
