/**
 * Makes every migration the schema engine applies atomic together with its bookkeeping row.
 *
 * The engine records a migration in `_prisma_migrations` ("started"), runs its script, then marks
 * the row finished, each in a transaction of its own. A process killed in between (SIGKILL, power
 * loss, the OOM killer) leaves a row started but never finished (on SQLite also half a script:
 * SQLite runs a script statement by statement), and the engine then refuses every later start with
 * "migrate found failed migrations": the service never comes back by itself, and `doctor` cannot
 * open the database to say why.
 *
 * Here the "started" INSERT is held back until its script arrives; then the INSERT, the script
 * and the engine's UPDATEs of the row run in ONE transaction, committed with the "finished" mark.
 * A crash leaves each migration entirely applied and recorded, or not there at all (it is applied
 * on the next start). A script that fails is rolled back with its row, so the database stays as it
 * was before that migration and the next start reports the same error until the migration is
 * fixed.
 */
import type { SqlDriverAdapter, SqlQuery, SqlResultSet } from '@prisma/driver-adapter-utils';
import { overrideMethods } from '../adapter-proxy';

/** The engine's "started" record (SQLite quotes with backticks, PostgreSQL with double quotes). */
const STARTED = /^\s*INSERT\s+INTO\s+[`"]?_prisma_migrations[`"]?\s*\(/i;
/** The engine's "finished" mark, the last write of a migration that worked. */
const FINISHED = /^\s*UPDATE\s+[`"]?_prisma_migrations[`"]?\s+SET\s+[`"]?finished_at[`"]?\s*=/i;

const NO_ROWS: SqlResultSet = { columnNames: [], columnTypes: [], rows: [] };

export interface AtomicMigrationOptions {
  /** The statement that opens the transaction (`BEGIN IMMEDIATE` on SQLite, `BEGIN` on PostgreSQL). */
  readonly begin: string;
  /**
   * Statements to run just before the transaction of `script` opens, and after it ends (committed
   * or not). SQLite ignores `PRAGMA foreign_keys` inside a transaction, so a script that turns
   * foreign keys off to rebuild a table needs it done here.
   */
  readonly around?: (script: string) => { readonly before: readonly string[]; readonly after: readonly string[] };
}

/**
 * Wraps the engine's connection to the real database (never the shadow one, which keeps no
 * history). The connection must be a single session: on PostgreSQL a pool of one connection.
 */
export function withAtomicMigrations(adapter: SqlDriverAdapter, options: AtomicMigrationOptions): SqlDriverAdapter {
  /** The "started" INSERT not sent yet. */
  let held: SqlQuery | undefined;
  /** Statements to run when the open transaction ends; undefined while none is open. */
  let open: { readonly after: readonly string[] } | undefined;

  const run = (sql: string) => adapter.executeRaw({ sql, args: [], argTypes: [] });

  /** Sends a held INSERT as it is (the engine did something else than run the script next). */
  async function flushHeld(): Promise<void> {
    const query = held;
    held = undefined;
    if (query) await adapter.queryRaw(query);
  }

  async function end(statement: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    const after = open?.after ?? [];
    open = undefined;
    try {
      await run(statement);
    } finally {
      for (const sql of after) await run(sql);
    }
  }

  return overrideMethods(adapter, {
    queryRaw: async (query: SqlQuery) => {
      if (!open && STARTED.test(query.sql)) {
        await flushHeld();
        held = query;
        return NO_ROWS;
      }
      await flushHeld();
      if (open && FINISHED.test(query.sql)) {
        const result = await adapter.queryRaw(query);
        await end('COMMIT');
        return result;
      }
      return adapter.queryRaw(query);
    },
    executeRaw: async (query: SqlQuery) => {
      await flushHeld();
      return adapter.executeRaw(query);
    },
    executeScript: async (script: string) => {
      const started = held;
      held = undefined;
      if (!started || open) {
        if (started) await adapter.queryRaw(started);
        return adapter.executeScript(script);
      }
      const { before, after } = options.around?.(script) ?? { before: [], after: [] };
      try {
        for (const sql of before) await run(sql);
        await run(options.begin);
      } catch (error) {
        for (const sql of after) await run(sql).catch(() => undefined);
        throw error;
      }
      open = { after };
      try {
        await adapter.queryRaw(started);
        await adapter.executeScript(script);
      } catch (error) {
        await end('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
    dispose: async () => {
      held = undefined;
      if (open) await end('ROLLBACK').catch(() => undefined);
      return adapter.dispose();
    },
  });
}
