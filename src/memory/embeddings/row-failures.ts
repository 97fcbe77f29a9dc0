/**
 * The rows that fail to embed on their own while the embedder embeds the others: each is counted,
 * and once it has failed `maxRowFailures` times it is set aside, so that the queue, ordered by id,
 * goes on past it. Kept apart from the worker because it is the one place that decides a row's
 * fate and keeps a record of it: the row's own mark, a log line with its id, scope and size but
 * never its text, and the `nocturne_embedding_set_aside_total` counter.
 */
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import type { VectorIndex } from '../vectors/vector-index';
import { type EmbeddingQueue, type PendingRow, versionKey } from './embedding-queue';

/** The failures of rows embedded alone, counted in this process. */
export interface RowFailures {
  /** Counts the rows of `batch` that failed alone (by index); those that failed often enough are set aside. */
  note(batch: readonly PendingRow[], failures: ReadonlyMap<number, unknown>): Promise<void>;
  /** Forgets the count of rows dealt with (embedded, or changed so that another version is pending). */
  clear(rows: readonly PendingRow[]): void;
}

/** The failure counts of one worker (in memory: a restart gives every row its tries again). */
export function createRowFailures(deps: {
  queue: Pick<EmbeddingQueue, 'markSetAside'>;
  index: Pick<VectorIndex, 'delete'>;
  log: Logger;
  metrics?: Pick<Metrics, 'inc'>;
  embedderName: string;
  maxRowFailures: number;
}): RowFailures {
  const { queue, index, log, embedderName, maxRowFailures } = deps;
  /** Times each row version failed alone in this process (cleared once it is embedded or set aside). */
  const rowFailures = new Map<string, number>();

  return {
    async note(batch, failures) {
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
        if (!(await queue.markSetAside(row))) continue;
        await index.delete(row.scopeId, [row.id]);
        deps.metrics?.inc('nocturne_embedding_set_aside_total', { kind: row.kind });
        log.error('a row cannot be embedded: set aside (it keeps keyword search; a reindex or another embedder tries it again), the queue goes on', {
          kind: row.kind,
          id: row.id,
          scopeId: row.scopeId,
          bytes: Buffer.byteLength(row.content, 'utf8'),
          embedder: embedderName,
          failures: times,
          ...reason,
        });
      }
    },

    clear(rows) {
      for (const row of rows) rowFailures.delete(versionKey(row));
    },
  };
}
