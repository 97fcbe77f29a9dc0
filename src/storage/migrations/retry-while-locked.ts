/**
 * Applies the SQLite migrations once the database file is free, within a bound.
 *
 * The schema engine takes SQLite's exclusive lock for a migration (`PRAGMA
 * main.locking_mode=EXCLUSIVE`, its equivalent of PostgreSQL's advisory lock), and in WAL mode
 * every open connection to the file holds a shared lock: while any other process has the file
 * open (a sibling CLI command, an operator's sqlite3 shell, a backup or monitoring reader) the
 * engine waits out the busy timeout and gives up, having changed nothing. Such a reader often
 * closes a little later, so the start tries again with growing pauses for
 * {@link MIGRATION_LOCK_WAIT_MS}, saying once why it waits and who holds the file; past that it
 * fails with an error naming them.
 *
 * The exclusive lock itself is kept, not rewritten into per-migration write transactions: it is
 * the engine's only guard against two processes applying the same migration at once (a data
 * migration would then run twice), and it keeps a newer checkout from changing the schema under a
 * Nocturne process still running older code.
 */
import { StorageError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { describeFileHolders, findFileHolders } from '../sqlite-file-holders';
import { MIGRATION_LOCKED } from './migration-runner';

/** How long a start keeps trying to migrate while another connection holds the file. */
export const MIGRATION_LOCK_WAIT_MS = 30_000;

/** The pause after the first locked attempt; it doubles up to {@link MAX_PAUSE_MS}. */
const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 4_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function isLocked(error: unknown): error is StorageError {
  return error instanceof StorageError && error.code === MIGRATION_LOCKED;
}

/**
 * Runs `migrate` until it does not fail for the lock, or until {@link MIGRATION_LOCK_WAIT_MS}
 * have passed since the first attempt (each attempt itself waits out the busy timeout).
 */
export async function retryWhileLocked<T>(file: string, logger: Logger, migrate: () => Promise<T>): Promise<T> {
  const started = Date.now();
  let pause = FIRST_PAUSE_MS;
  let told = false;
  for (;;) {
    try {
      return await migrate();
    } catch (error) {
      if (!isLocked(error)) throw error;
      const holders = describeFileHolders(findFileHolders(file));
      const waited = Date.now() - started;
      if (waited + pause >= MIGRATION_LOCK_WAIT_MS) {
        throw new StorageError(
          `The database is locked by another process: ${file} is open in ${holders || 'another process'}, and migrations need the file alone. ` +
            `Waited ${Math.round(waited / 1000)} s; nothing was changed.`,
          {
            code: MIGRATION_LOCKED,
            cause: error,
            hint: 'Close that process (another Nocturne process, a CLI command, a sqlite3 shell, a backup or monitoring reader) and start again.',
          },
        );
      }
      if (!told) {
        told = true;
        logger.warn('the database file is open in another process and migrations need it alone: waiting for it to close', {
          file,
          holders: holders || 'unknown',
          waitMs: MIGRATION_LOCK_WAIT_MS,
        });
      }
      await sleep(pause);
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }
}
