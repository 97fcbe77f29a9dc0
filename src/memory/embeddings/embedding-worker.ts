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
 */
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import type { PrismaClient } from '../../storage/prisma';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorIndex, VectorKind, VectorRecord } from '../vectors/vector-index';
import type { Embedder } from './embedder';
import { embedIsolating } from './isolate-failures';
import { flushTombstones } from '../vectors/tombstones';

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

/** What `embeddedWith` holds for a row the embedder named `embedderName` could not embed. */
export function setAsideMark(embedderName: string): string {
  return `set-aside:${embedderName}`;
}

/** A row set aside (no text: ids and size only). */
export interface SetAsideRow {
  readonly kind: VectorKind;
  readonly id: string;
  readonly scopeId: string;
}

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
  /** Where rows set aside are counted (`nocturne_embedding_set_aside_total`). */
  metrics?: Pick<Metrics, 'inc'>;
  options?: EmbeddingWorkerOptions;
}): EmbeddingWorker {
  const { prisma, embedder, index, guard } = deps;
  const log = deps.logger.child({ component: 'embedding-worker' });
  const batchSize = deps.options?.batchSize ?? 64;
  const idleMs = deps.options?.idleMs ?? 2_000;
  const retryMs = deps.options?.retryMs ?? 1_000;
  const maxRowFailures = deps.options?.maxRowFailures ?? DEFAULT_MAX_ROW_FAILURES;
  const setAsideWith = setAsideMark(embedder.name);
  const pendingWhere = { OR: [{ embeddedWith: null }, { embeddedWith: { notIn: [embedder.name, setAsideWith] } }] };
  const setAsideWhere = { embeddedWith: setAsideWith };
  /** Times each row version failed alone in this process (cleared once it is embedded or set aside). */
  const rowFailures = new Map<string, number>();

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
    const rows: PendingRow[] = episodes.map((e) => ({
      id: e.id,
      scopeId: e.scopeId,
      content: e.author ? `${e.author}: ${e.content}` : e.content,
      kind: 'episode',
      version: e.contentHash,
    }));
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
    const batch = await nextBatch();
    if (batch.length === 0) return 0;
    const { vectors, failures } = await embedIsolating(
      embedder,
      batch.map((row) => row.content),
    );
    if (failures.size > 0) await noteFailures(batch, failures);
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
            prisma.memory.updateMany({
              where: { id: row.id, updatedAt: row.version as Date },
              data: { embeddedWith: embedder.name, updatedAt: row.version as Date },
            }),
      ),
    );
    await deleteVectorsOfChangedRows(rows.filter((_, i) => marked[i]!.count === 0));
    for (const row of rows) rowFailures.delete(versionKey(row));
    // Every row of the batch was dealt with: embedded, set aside, or one failure nearer to it.
    return batch.length;
  }

  const versionKey = (row: PendingRow) => `${row.kind}:${row.id}:${row.version instanceof Date ? row.version.toISOString() : row.version}`;

  /** Counts the rows that failed alone; those that failed {@link maxRowFailures} times are set aside. */
  async function noteFailures(batch: readonly PendingRow[], failures: ReadonlyMap<number, unknown>): Promise<void> {
    for (const [i, error] of failures) {
      const row = batch[i]!;
      const key = versionKey(row);
      const times = (rowFailures.get(key) ?? 0) + 1;
      // What the embedder said, without its message: an error may quote the text it was given.
      const reason = error instanceof AppError ? { code: error.code, status: error.details?.status } : { code: (error as Error)?.name ?? 'unknown' };
      if (times < maxRowFailures) {
        rowFailures.set(key, times);
        log.warn('a row failed to embed on its own while the others were embedded; it is tried again', {
          kind: row.kind,
          id: row.id,
          scopeId: row.scopeId,
          failures: times,
          ...reason,
        });
        continue;
      }
      rowFailures.delete(key);
      const marked =
        row.kind === 'episode'
          ? await prisma.episode.updateMany({ where: { id: row.id, contentHash: row.version as string }, data: { embeddedWith: setAsideWith } })
          : await prisma.memory.updateMany({
              where: { id: row.id, updatedAt: row.version as Date },
              data: { embeddedWith: setAsideWith, updatedAt: row.version as Date },
            });
      if (marked.count === 0) continue;
      await index.delete(row.scopeId, [row.id]);
      deps.metrics?.inc('nocturne_embedding_set_aside_total', { kind: row.kind });
      log.error('a row cannot be embedded: set aside (it keeps keyword search; a reindex or another embedder tries it again), the queue goes on', {
        kind: row.kind,
        id: row.id,
        scopeId: row.scopeId,
        bytes: Buffer.byteLength(row.content, 'utf8'),
        embedder: embedder.name,
        failures: times,
        ...reason,
      });
    }
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

  async function setAside(limit = 10): Promise<{ count: number; rows: SetAsideRow[] }> {
    const select = { id: true, scopeId: true } as const;
    const [episodes, memories, episodeRows, memoryRows] = await Promise.all([
      prisma.episode.count({ where: setAsideWhere }),
      prisma.memory.count({ where: setAsideWhere }),
      prisma.episode.findMany({ where: setAsideWhere, select, orderBy: { id: 'asc' }, take: limit }),
      prisma.memory.findMany({ where: setAsideWhere, select, orderBy: { id: 'asc' }, take: limit }),
    ]);
    const rows = [...episodeRows.map((r) => ({ kind: 'episode' as const, ...r })), ...memoryRows.map((r) => ({ kind: 'memory' as const, ...r }))];
    return { count: episodes + memories, rows: rows.slice(0, limit) };
  }

  return {
    runOnce,
    pending,
    setAside,
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
