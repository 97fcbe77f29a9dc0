/**
 * Embeds episodes and memories off the request path, in batches. The work queue is the database
 * itself: every row whose `embeddedWith` is not the configured embedder's name is pending, so
 * after a crash or restart every row still gets its vector, and a reindex is just "clear the
 * index and let the worker run".
 *
 * Order of writes: vectors first, then the rows are marked; a crash in between only means a
 * vector is written twice (upserts are idempotent).
 */
import type { Logger } from '../../shared/logger';
import type { PrismaClient } from '../../storage/prisma';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorIndex, VectorKind, VectorRecord } from '../vectors/vector-index';
import type { Embedder } from './embedder';
import { flushTombstones } from '../vectors/tombstones';

export interface EmbeddingWorkerOptions {
  readonly batchSize?: number;
  /** Pause between polls when there is nothing to do (a `wake()` cuts it short). */
  readonly idleMs?: number;
  /** Pause after a failed batch, doubled per consecutive failure up to 5 minutes. */
  readonly retryMs?: number;
}

export interface EmbeddingWorker {
  /** Embeds one batch; returns how many rows it embedded (0 when nothing is pending). */
  runOnce(): Promise<number>;
  /** Embeds until nothing is pending; reports progress. */
  drain(onProgress?: (done: number, pending: number) => void): Promise<number>;
  /** Rows still waiting for a vector. */
  pending(): Promise<number>;
  /** Runs in the background until stop(). */
  start(): void;
  /** Tells a sleeping background loop that new rows arrived. */
  wake(): void;
  /** Finishes the batch in flight and stops. */
  stop(): Promise<void>;
}

interface PendingRow {
  readonly id: string;
  readonly scopeId: string;
  readonly content: string;
  readonly kind: VectorKind;
  /** What identifies this version of the row (episode content hash, memory updatedAt). */
  readonly version: string | Date;
}

export function createEmbeddingWorker(deps: {
  prisma: PrismaClient;
  embedder: Embedder;
  index: VectorIndex;
  guard: IndexGuard;
  logger: Logger;
  options?: EmbeddingWorkerOptions;
}): EmbeddingWorker {
  const { prisma, embedder, index, guard } = deps;
  const log = deps.logger.child({ component: 'embedding-worker' });
  const batchSize = deps.options?.batchSize ?? 64;
  const idleMs = deps.options?.idleMs ?? 2_000;
  const retryMs = deps.options?.retryMs ?? 1_000;
  const pendingWhere = { OR: [{ embeddedWith: null }, { embeddedWith: { not: embedder.name } }] };

  let running = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;

  async function nextBatch(): Promise<PendingRow[]> {
    const episodes = await prisma.episode.findMany({
      where: pendingWhere,
      select: { id: true, scopeId: true, content: true, author: true, contentHash: true },
      orderBy: { id: 'asc' },
      take: batchSize,
    });
    // Embedded as "author: content", like the full-text index, so the speaker is part of the meaning.
    const rows: PendingRow[] = episodes.map((e) => ({ id: e.id, scopeId: e.scopeId, content: e.author ? `${e.author}: ${e.content}` : e.content, kind: 'episode', version: e.contentHash }));
    if (rows.length < batchSize) {
      const memories = await prisma.memory.findMany({
        where: pendingWhere,
        select: { id: true, scopeId: true, content: true, updatedAt: true },
        orderBy: { id: 'asc' },
        take: batchSize - rows.length,
      });
      rows.push(...memories.map((m) => ({ id: m.id, scopeId: m.scopeId, content: m.content, kind: 'memory' as const, version: m.updatedAt })));
    }
    return rows;
  }

  async function runOnce(): Promise<number> {
    await guard.ensure();
    guard.assertReady();
    await flushTombstones(prisma, index);
    const rows = await nextBatch();
    if (rows.length === 0) return 0;
    const vectors = await embedder.embed(rows.map((row) => row.content));
    const records: VectorRecord[] = rows.map((row, i) => ({ id: row.id, kind: row.kind, scopeId: row.scopeId, vector: vectors[i] as Float32Array }));
    // A text with no words ("...", "!!!") embeds to a vector with no direction, which no index
    // takes: such a row is marked like the others but holds no vector (keywords still find it),
    // instead of failing every batch that reaches it and holding up every row after it.
    const directionless = records.filter((record) => !hasDirection(record.vector));
    // A row changed while it was embedded (a forget redacted it) must not get the old text's
    // vector back: such rows are left out here and stay pending for the next batch.
    const current = await stillCurrent(rows);
    await index.upsert(records.filter((record) => hasDirection(record.vector) && current.has(record.id)));
    await deleteVectors(directionless);
    // A row edited while we embedded keeps its pending mark: only the version we embedded is marked.
    const marked = await prisma.$transaction(
      rows.map((row) =>
        row.kind === 'episode'
          ? prisma.episode.updateMany({ where: { id: row.id, contentHash: row.version as string }, data: { embeddedWith: embedder.name } })
          : // updatedAt is given as it was: being embedded is bookkeeping, not a change to the memory
            // (Prisma would otherwise move it, and an export would differ after every embedding).
            prisma.memory.updateMany({ where: { id: row.id, updatedAt: row.version as Date }, data: { embeddedWith: embedder.name, updatedAt: row.version as Date } }),
      ),
    );
    await deleteVectorsOfChangedRows(rows.filter((_, i) => marked[i]!.count === 0));
    return rows.length;
  }

  /** The ids of `rows` whose stored version is still the one that was embedded. */
  async function stillCurrent(rows: readonly PendingRow[]): Promise<Set<string>> {
    const ids = rows.map((row) => row.id);
    const [episodes, memories] = await Promise.all([
      prisma.episode.findMany({ where: { id: { in: ids } }, select: { id: true, contentHash: true } }),
      prisma.memory.findMany({ where: { id: { in: ids } }, select: { id: true, updatedAt: true } }),
    ]);
    const versions = new Map<string, string>([
      ...episodes.map((e) => [e.id, e.contentHash] as [string, string]),
      ...memories.map((m) => [m.id, m.updatedAt.toISOString()] as [string, string]),
    ]);
    const versionOf = (row: PendingRow) => (row.version instanceof Date ? row.version.toISOString() : row.version);
    return new Set(rows.filter((row) => versions.get(row.id) === versionOf(row)).map((row) => row.id));
  }

  /**
   * A row forgotten or redacted while we embedded it: its tombstone may have been flushed before
   * our upsert, which then wrote the old text's vector back. Rows that could not be marked (gone,
   * or changed since they were read) lose the vector just written; a changed row stays pending
   * and gets the vector of its current text in the next batch. (A forget committed after this
   * finds the vector in place and its own tombstone flush deletes it.)
   */
  async function deleteVectorsOfChangedRows(unmarked: readonly PendingRow[]): Promise<void> {
    if (unmarked.length === 0) return;
    const byScope = new Map<string, string[]>();
    for (const row of unmarked) byScope.set(row.scopeId, [...(byScope.get(row.scopeId) ?? []), row.id]);
    for (const [scopeId, changed] of byScope) {
      await index.delete(scopeId, changed);
      log.debug('deleted the vectors of rows changed or removed while they were being embedded', { scopeId, count: changed.length });
    }
  }

  /** Removes the vectors an earlier version of these rows may have left. */
  async function deleteVectors(records: readonly VectorRecord[]): Promise<void> {
    const byScope = new Map<string, string[]>();
    for (const record of records) byScope.set(record.scopeId, [...(byScope.get(record.scopeId) ?? []), record.id]);
    for (const [scopeId, ids] of byScope) await index.delete(scopeId, ids);
    if (records.length > 0) log.debug('rows without words have no vector', { count: records.length });
  }

  async function pending(): Promise<number> {
    const [episodes, memories] = await Promise.all([prisma.episode.count({ where: pendingWhere }), prisma.memory.count({ where: pendingWhere })]);
    return episodes + memories;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async function backgroundLoop(): Promise<void> {
    let failures = 0;
    while (running) {
      try {
        const done = await runOnce();
        failures = 0;
        if (done === 0) await sleep(idleMs);
      } catch (error) {
        failures += 1;
        const wait = Math.min(retryMs * 2 ** (failures - 1), 300_000);
        log.warn('embedding batch failed; will retry', { error, retryInMs: wait, failures });
        await sleep(wait);
      }
    }
  }

  return {
    runOnce,
    pending,
    async drain(onProgress) {
      let total = 0;
      for (;;) {
        const done = await runOnce();
        if (done === 0) return total;
        total += done;
        onProgress?.(total, await pending());
      }
    },
    start() {
      if (running) return;
      running = true;
      loop = backgroundLoop();
    },
    wake() {
      wakeUp?.();
    },
    async stop() {
      running = false;
      wakeUp?.();
      await loop;
      loop = undefined;
    },
  };
}

/** False for an all-zero vector (a text without words): it points nowhere, so no cosine with it means anything. */
function hasDirection(vector: Float32Array): boolean {
  return vector.some((x) => x !== 0);
}
