/**
 * Waiting for another process's SQLite lock without stopping the process. better-sqlite3 is
 * synchronous: with a busy timeout, a statement that meets a lock sleeps inside SQLite's busy
 * handler on the event loop, and every channel, health check and timer of the process waits with
 * it (an outside `BEGIN IMMEDIATE` held for 8 s made /healthz answer in 8.1 s; a CLI import beside
 * the service, in 5.6 s).
 *
 * So the connections the process uses on its event loop have a busy timeout of 0: a statement
 * that meets a lock fails at once with SQLITE_BUSY, having done nothing, and is tried again after
 * a timer ({@link waitWhileBusy}), up to the same total wait as the busy timeout gave. Between
 * two tries the event loop serves everything else.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a statement waits in total for a lock held by another connection or process. */
export const SQLITE_BUSY_TIMEOUT_MS = 10_000;

/**
 * The first pause before trying again, doubled after each failed try up to
 * {@link BUSY_RETRY_MAX_MS}. A failed try costs microseconds; short pauses find the lock free in
 * the short gaps another process leaves between its transactions (an import between batches).
 */
const BUSY_RETRY_FIRST_MS = 1;
/** The longest pause between two tries: a writer that leaves the lock free longer lets a waiting one in. */
export const BUSY_RETRY_MAX_MS = 10;

/**
 * Whether `error` is SQLite's "the lock is taken" (SQLITE_BUSY and its extended codes), from
 * better-sqlite3 directly or wrapped by Prisma's adapter. SQLITE_BUSY_SNAPSHOT is not: a read
 * transaction whose snapshot is stale cannot succeed by waiting.
 */
export function isSqliteBusy(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const record = error as { code?: unknown; cause?: { originalCode?: unknown } };
  const code = typeof record.code === 'string' ? record.code : record.cause?.originalCode;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY') && code !== 'SQLITE_BUSY_SNAPSHOT';
}

/**
 * Runs `attempt` until it does not fail with SQLITE_BUSY, pausing on a timer between tries, for
 * at most `limitMs`; then the last SQLITE_BUSY is thrown, as the busy timeout did. `attempt` must
 * be safe to run again after a SQLITE_BUSY: one statement outside a transaction, or a whole
 * transaction (SQLite rolls back nothing else when a statement meets a lock).
 */
export async function waitWhileBusy<T>(attempt: () => T | Promise<T>, limitMs: number = SQLITE_BUSY_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + limitMs;
  let pause = BUSY_RETRY_FIRST_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() >= deadline) throw error;
    }
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
    pause = Math.min(pause * 2, BUSY_RETRY_MAX_MS);
  }
}

/**
 * Polls `check` (true when done) on a timer until it answers true or `limitMs` has passed; for
 * work SQLite reports as partial rather than failed, such as a checkpoint that waits for readers.
 */
export async function pollUntil(check: () => boolean | Promise<boolean>, limitMs: number, pauseMs: number): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pauseMs, Math.max(0, deadline - Date.now())));
  }
}
