/**
 * The database failures an operator can do something about — out of space, locked by another
 * process for longer than the busy timeout, a read-only file — as {@link StorageError}s that say
 * what happened, that the failed write left nothing behind (every write that can hit them runs
 * in a transaction), and what to do. Prisma reports them as "Database error. Code: SQLITE_FULL"
 * or "Operation has timed out", which tells a person nothing.
 *
 * Anything else is not ours to explain and is returned as undefined (callers rethrow it).
 */
import path from 'node:path';
import type { Config } from '../config/load-config';
import { AppError, StorageError } from '../shared/errors';
import { SQLITE_BUSY_TIMEOUT_MS } from './sqlite-lock-waits';

export type StorageFailure = 'full' | 'busy' | 'read_only';

/** The driver's own code and message, wherever Prisma or the adapter put them. */
function driverFacts(error: unknown): { codes: string[]; messages: string[] } {
  const codes: string[] = [];
  const messages: string[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number) => {
    if (value === null || typeof value !== 'object' || seen.has(value) || depth > 6) return;
    seen.add(value);
    const record = value as Record<string, unknown>;
    for (const key of ['originalCode', 'code']) if (typeof record[key] === 'string') codes.push(record[key] as string);
    for (const key of ['originalMessage', 'message']) if (typeof record[key] === 'string') messages.push(record[key] as string);
    for (const key of ['cause', 'meta', 'driverAdapterError']) visit(record[key], depth + 1);
  };
  visit(error, 0);
  return { codes, messages };
}

/** Which of the explainable failures `error` is, if any. */
export function classifyStorageFailure(error: unknown): StorageFailure | undefined {
  if (error instanceof AppError) return undefined;
  const { codes, messages } = driverFacts(error);
  const text = messages.join('\n');
  // SQLite: SQLITE_FULL (also a database capped by max_page_count); PostgreSQL: 53100 disk_full.
  if (codes.some((c) => c.startsWith('SQLITE_FULL') || c === '53100') || /database or disk is full|No space left on device|could not extend file/i.test(text))
    return 'full';
  if (codes.some((c) => c.startsWith('SQLITE_BUSY') || c.startsWith('SQLITE_LOCKED')) || /database is locked|database table is locked/i.test(text))
    return 'busy';
  if (codes.some((c) => c.startsWith('SQLITE_READONLY')) || /attempt to write a readonly database/i.test(text)) return 'read_only';
  return undefined;
}

function where(database: Config['database'] | undefined): string {
  if (!database) return 'the database';
  return database.provider === 'sqlite' ? database.file : 'the PostgreSQL database';
}

/**
 * A StorageError explaining `error` (see the module comment), or undefined when it is not one of
 * the failures explained here. `database` names the file or server in the message.
 */
export function explainStorageFailure(error: unknown, database?: Config['database']): StorageError | undefined {
  const kind = classifyStorageFailure(error);
  if (!kind) return undefined;
  const sqlite = database?.provider !== 'postgres';
  const place = where(database);
  if (kind === 'full') {
    return new StorageError(
      `The database is out of space: the disk holding ${place} is full. Nothing of the failed write was stored; everything stored before is intact.`,
      {
        code: 'storage.full',
        cause: error,
        hint: sqlite
          ? `Free space on that disk${database?.provider === 'sqlite' ? ` (${path.dirname(database.file)})` : ''}, or stop Nocturne, move the data folder to a larger disk and point DATA_DIR (or DATABASE_URL) at it; then retry.`
          : 'Free space on the PostgreSQL server\u2019s disk, then retry.',
      },
    );
  }
  if (kind === 'busy') {
    return new StorageError(
      `The database is locked: another process kept its write lock on ${place} for more than ${SQLITE_BUSY_TIMEOUT_MS / 1000} s. Nothing of this write was stored.`,
      {
        code: 'storage.busy',
        cause: error,
        hint: 'Another Nocturne process (npm start, a CLI command) or a tool (sqlite3, a backup) is writing to it; retry when it has finished.',
      },
    );
  }
  return new StorageError(`The database cannot be written: ${place} is read-only for this process. Nothing was stored.`, {
    code: 'storage.read_only',
    cause: error,
    hint: 'Check the permissions of the data folder (DATA_DIR) and its files for the user running Nocturne, and that the disk is not mounted read-only.',
  });
}

/**
 * A transaction PostgreSQL rolled back as a deadlock's victim or for a serialization conflict
 * (Prisma's P2034; the driver's 40P01 / 40001). Nothing of it was applied, so it can run again:
 * replicas' concurrent writers (the embedding worker marking episodes, a consolidation marking
 * the same episodes) can lock rows in different orders, and PostgreSQL then picks one to abort.
 */
export function isWriteConflict(error: unknown): boolean {
  const { codes } = driverFacts(error);
  return codes.some((code) => code === 'P2034' || code === '40P01' || code === '40001');
}
