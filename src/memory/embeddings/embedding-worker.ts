/**
 * Embeds episodes and memories off the request path, in batches. The work queue is the database
 * itself: every row whose `embeddedWith` is not the configured embedder's name is pending, so
 * after a crash or restart every row still gets its vector, and a reindex is just "clear the
 * index and let the worker run".
 *
 * Order of writes: vectors first, then the rows are marked; a crash in between only means a
 * vector is written twice (upserts are idempotent).
 *
 * A row the embedder keeps refusing while it embeds others (`isolate-failures.ts` finds it by
 * splitting the batch) is tried {@link DEFAULT_MAX_ROW_FAILURES} times, then set aside:
 * `embeddedWith` becomes {@link setAsideMark} of the embedder, so it leaves the queue and every
 * row after it goes on being embedded. It keeps its keyword search; the record is the row's own
 * state (`doctor` lists such rows), a log line with its id, scope and size but never its text,
 * and the `nocturne_embedding_set_aside_total` counter. A reindex or another embedder tries it
 * again; so does a change of its text (a forget).
 *
 * The parts: the queue in rows (`embedding-queue.ts`), the count of rows failing alone and their
 * setting aside (`row-failures.ts`), and when batches run (`embedding-loop.ts`); this file is what
 * one batch does, in its order.
 */
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import type { PrismaClient } from '../../storage/prisma';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorIndex, VectorRecord } from '../vectors/vector-index';
import type { Embedder } from './embedder';
import { createEmbeddingLoop } from './embedding-loop';
import { createEmbeddingQueue, type PendingRow, type SetAsideRow } from './embedding-queue';
import { embedIsolating } from './isolate-failures';
import { createRowFailures } from './row-failures';
import { flushTombstones } from '../vectors/tombstones';

export { setAsideMark, type SetAsideRow } from './embedding-queue';

export interface EmbeddingWorkerOptions {
  readonly batchSize?: number;
  /** Pause between polls when there is nothing to do (a `wake()` cuts it short). */
  readonly idleMs?: number;
  /** Pause after a failed batch, doubled per consecutive failure up to 5 minutes. */
  readonly retryMs?: number;
  /** Times a row may fail alone (the embedder working for the others) before it is set aside. */
  readonly maxRowFailures?: number;
}

/** Times a row may fail alone before it is set aside: more than a passing fault, fewer than forever. */
export const DEFAULT_MAX_ROW_FAILURES = 3;

export interface EmbeddingWorker {
  /** Embeds one batch; returns how many rows it embedded (0 when nothing is pending). */
  runOnce(): Promise<number>;
  /** Embeds until nothing is pending; reports progress. */
  drain(onProgress?: (done: number, pending: number) => void): Promise<number>;
  /** Rows still waiting for a vector. */
  pending(): Promise<number>;
  /** Rows the configured embedder could not embed and that were set aside: how many, and the first `limit`. */
  setAside(limit?: number): Promise<{ count: number; rows: SetAsideRow[] }>;
  /** Runs in the background until stop(). */
  start(): void;
  /** Tells a sleeping background loop that new rows arrived. */
  wake(): void;
  /** Finishes the batch in flight and stops. */
  stop(): Promise<void>;
}

export function createEmbeddingWorker(deps: {
  prisma: PrismaClient;
  embedder: Embedder;
  index: VectorIndex;
  guard: IndexGuard;
  logger: Logger;
  /** Where rows set aside are counted (`nocturne_embedding_set_aside_total`). */
  metrics?: Pick<Metrics, 'inc'>;
  options?: EmbeddingWorkerOptions;
}): EmbeddingWorker {
  const { prisma, embedder, index, guard } = deps;
  const log = deps.logger.child({ component: 'embedding-worker' });
  const queue = createEmbeddingQueue({ prisma, embedderName: embedder.name, batchSize: deps.options?.batchSize ?? 64 });
  const rowFailures = createRowFailures({
    queue,
    index,
    log,
    metrics: deps.metrics,
    embedderName: embedder.name,
    maxRowFailures: deps.options?.maxRowFailures ?? DEFAULT_MAX_ROW_FAILURES,
  });

  async function runOnce(): Promise<number> {
    await guard.ensure();
    guard.assertReady();
    await flushTombstones(prisma, index);
    const batch = await queue.next();
    if (batch.length === 0) return 0;
    const { vectors, failures } = await embedIsolating(
      embedder,
      batch.map((row) => row.content),
    );
    if (failures.size > 0) await rowFailures.note(batch, failures);
    const rows = batch.filter((_, i) => vectors[i] !== undefined);
    const records: VectorRecord[] = rows.map((row) => ({
      id: row.id,
      kind: row.kind,
      scopeId: row.scopeId,
      vector: vectors[batch.indexOf(row)] as Float32Array,
    }));
    // A text with no words ("...", "!!!") embeds to a vector with no direction, which no index
    // takes: such a row is marked like the others but holds no vector (keywords still find it),
    // instead of failing every batch that reaches it and holding up every row after it.
    const directionless = records.filter((record) => !hasDirection(record.vector));
    // A row changed while it was embedded (a forget redacted it) must not get the old text's
    // vector back: such rows are left out here and stay pending for the next batch.
    const current = await queue.stillCurrent(rows);
    await index.upsert(records.filter((record) => hasDirection(record.vector) && current.has(record.id)));
    await deleteVectors(directionless);
    // A row edited while we embedded keeps its pending mark: only the version we embedded is marked.
    const marked = await queue.markEmbedded(rows);
    await deleteVectorsOfChangedRows(rows.filter((_, i) => !marked[i]));
    rowFailures.clear(rows);
    // Every row of the batch was dealt with: embedded, set aside, or one failure nearer to it.
    return batch.length;
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

  const loop = createEmbeddingLoop({ runOnce, idleMs: deps.options?.idleMs ?? 2_000, retryMs: deps.options?.retryMs ?? 1_000, log });

  return {
    runOnce,
    pending: () => queue.pending(),
    setAside: (limit = 10) => queue.setAside(limit),
    async drain(onProgress) {
      let total = 0;
      for (;;) {
        const done = await runOnce();
        if (done === 0) return total;
        total += done;
        onProgress?.(total, await queue.pending());
      }
    },
    start: () => loop.start(),
    wake: () => loop.wake(),
    stop: () => loop.stop(),
  };
}

/** False for an all-zero vector (a text without words): it points nowhere, so no cosine with it means anything. */
function hasDirection(vector: Float32Array): boolean {
  return vector.some((x) => x !== 0);
}
