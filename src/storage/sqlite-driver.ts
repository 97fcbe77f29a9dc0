/**
 * SQLite through better-sqlite3: the embedded default. One file under DATA_DIR, WAL mode so
 * readers never wait for the writer, a busy timeout so two processes on one file queue instead
 * of failing, foreign keys on (cascading deletes are how /forget reaches every row), and
 * secure_delete on (what /forget deletes is zeroed in the file, not left in free pages), and WAL
 * checkpoints on a thread of their own (sqlite-checkpointer.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Database from 'better-sqlite3';
import type { SqlDriverAdapter, SqlDriverAdapterFactory, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { PrismaClient as SqlitePrismaClient } from '../generated/sqlite/client';
import { overrideMethods } from './adapter-proxy';
import { registerSqliteConnection, type StatementSource } from './sqlite-reads';
import { withAtomicMigrations } from './migrations/atomic-migrations';
import type { PrismaClient } from './prisma';
import { DEFAULT_AUTOCHECKPOINT_PAGES, startSqliteCheckpointer } from './sqlite-checkpointer';
import { applyKey, unlockSqlite } from './sqlite-encryption';
import { isSqliteBusy, SQLITE_BUSY_TIMEOUT_MS, waitWhileBusy } from './sqlite-lock-waits';

export { SQLITE_BUSY_TIMEOUT_MS } from './sqlite-lock-waits';

/** A statement that only reads (or a pragma, such as a checkpoint): run at once, not queued behind a transaction. */
const READ_ONLY_SQL = /^\s*(SELECT|PRAGMA|EXPLAIN|WITH)\b/i;

/**
 * The longest a transaction waits to begin, by default: the lock wait of its BEGIN (which now
 * waits on timers, so Prisma's 2 s default would cut it short) and some time queued behind this
 * process's own transactions.
 */
const TRANSACTION_MAX_WAIT_MS = SQLITE_BUSY_TIMEOUT_MS + 5_000;

/** How a Nocturne SQLite file is opened: where, and with which encryption key (docs/storage.md). */
export interface SqliteFile {
  readonly file: string;
  /** DATABASE_ENCRYPTION_KEY; undefined for a plain file. */
  readonly encryptionKey?: string;
}

type BetterSqliteClient = Parameters<typeof unlockSqlite>[0];

/** The better-sqlite3 connection under a Prisma adapter (the adapter keeps it as `client`). */
function clientOf(adapter: SqlDriverAdapter): BetterSqliteClient {
  const client = (adapter as unknown as { client?: BetterSqliteClient }).client;
  if (!client || typeof client.prepare !== 'function') {
    throw new Error('@prisma/adapter-better-sqlite3 no longer exposes its better-sqlite3 client; see clientOf in src/storage/sqlite-driver.ts');
  }
  return client;
}

/**
 * Prisma's adapter factory for `file`, whose connections get the encryption key before anything
 * reads the file (see sqlite-encryption.ts); that the key opens the file is checked once, by
 * {@link createSqliteClient}, before any of them. The shadow database of migrations lives in
 * memory and needs no key.
 */
function adapterFactory({ file, encryptionKey }: SqliteFile, shadow: boolean, busyTimeoutMs: number): SqlMigrationAwareDriverAdapterFactory {
  const base = new PrismaBetterSqlite3({ url: `file:${file}`, timeout: busyTimeoutMs }, shadow ? { shadowDatabaseUrl: ':memory:' } : undefined);
  return {
    provider: base.provider,
    adapterName: base.adapterName,
    connect: async () => {
      const adapter = await base.connect();
      applyKey(clientOf(adapter), encryptionKey);
      return adapter;
    },
    connectToShadowDb: () => base.connectToShadowDb(),
  };
}

/** Creates the folder of the database file; SQLite creates the file itself. */
export function ensureSqliteDirectory(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
}

/**
 * Transactions that take the write lock when they begin (`BEGIN IMMEDIATE`), and lock waits off
 * the event loop (see sqlite-lock-waits.ts): the connection's busy timeout is 0, and a statement
 * or a `BEGIN IMMEDIATE` that meets another process's lock is tried again on a timer.
 *
 * Why IMMEDIATE: the adapter begins with a plain (deferred) `BEGIN`: the transaction reads first
 * and asks for the write lock at its first write. When another connection holds that lock then,
 * waiting could deadlock, and the write fails at once with SQLITE_BUSY ("Operations timed out"
 * from Prisma): an import, a message or a consolidation batch failed whenever another process
 * (the CLI next to `npm start`) was writing. Only the `BEGIN IMMEDIATE` waits, before the
 * transaction did anything: once it holds the write lock, its statements meet no lock (WAL
 * readers never wait), so a transaction is never tried again halfway.
 *
 * Statements outside a transaction (a single write, a read, a pragma) are tried again whole: a
 * statement that met a lock did nothing.
 */
function withLockWaitsOffTheEventLoop(factory: SqlDriverAdapterFactory, onConnect: (connection: StatementSource) => void): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => {
      const adapter = await factory.connect();
      onConnect(clientOf(adapter) as unknown as StatementSource);
      const client = clientOf(adapter) as unknown as { prepare: (sql: string) => unknown };
      const prepare = client.prepare.bind(client) as (sql: string) => { run(): unknown };
      /** Set when startTransaction below has run `BEGIN IMMEDIATE`: the adapter's `BEGIN` is then skipped. */
      let begun = false;
      let begin: { run(): unknown } | undefined;
      client.prepare = (sql: string) => {
        if (sql !== 'BEGIN') return prepare(sql);
        // The adapter takes its transaction mutex before BEGIN and never gives it back when BEGIN
        // throws: a BEGIN that failed would leave every later transaction of this client waiting
        // forever. So when the lock stayed taken past the wait, a deferred BEGIN opens the
        // transaction instead: its first write fails at once with SQLITE_BUSY (reported as such),
        // Prisma rolls back, and the mutex is released.
        if (!begin) {
          const immediate = prepare('BEGIN IMMEDIATE');
          const deferred = prepare('BEGIN');
          begin = {
            run() {
              if (begun) {
                begun = false;
                return { changes: 0, lastInsertRowid: 0 };
              }
              try {
                return immediate.run();
              } catch {
                return deferred.run();
              }
            },
          };
        }
        return begin;
      };
      // One transaction at a time on the connection, from before its BEGIN IMMEDIATE (which now
      // waits on timers, while other work runs) to its COMMIT or ROLLBACK.
      let queue: Promise<void> = Promise.resolve();
      const takeTurn = async (): Promise<() => void> => {
        let release!: () => void;
        const previous = queue;
        queue = new Promise<void>((resolve) => (release = resolve));
        await previous;
        return release;
      };
      // A write outside a transaction waits for the open transaction to end: on the one connection
      // it would run inside it and be undone with it (a forget's preview rolls its transaction
      // back). A create comes as a query (INSERT ... RETURNING), so queries wait too unless they
      // only read. Reads do not wait: a health check or a reply's search would stand still behind
      // an import's transaction; they may see what that transaction has not committed yet.
      const outsideTransactions = async <T>(run: () => Promise<T>): Promise<T> => {
        const release = await takeTurn();
        try {
          return await run();
        } finally {
          release();
        }
      };
      return overrideMethods(adapter, {
        queryRaw: (query) =>
          READ_ONLY_SQL.test(query.sql)
            ? waitWhileBusy(() => adapter.queryRaw(query))
            : outsideTransactions(() => waitWhileBusy(() => adapter.queryRaw(query))),
        executeRaw: (query) => outsideTransactions(() => waitWhileBusy(() => adapter.executeRaw(query))),
        startTransaction: async (isolationLevel) => {
          const release = await takeTurn();
          try {
            const immediate = prepare('BEGIN IMMEDIATE');
            begun = await waitWhileBusy(() => (immediate.run(), true)).catch((error: unknown) => {
              if (isSqliteBusy(error)) return false;
              throw error;
            });
            const transaction = await adapter.startTransaction(isolationLevel);
            const end = (finish: () => Promise<void>) => async () => {
              try {
                await finish();
              } finally {
                release();
              }
            };
            return overrideMethods(transaction, { commit: end(() => transaction.commit()), rollback: end(() => transaction.rollback()) });
          } catch (error) {
            if (begun) {
              begun = false;
              prepare('ROLLBACK').run();
            }
            release();
            throw error;
          }
        },
      });
    },
  };
}

/** A Prisma client on the SQLite file, with the pragmas Nocturne relies on. */
export async function createSqliteClient(target: SqliteFile): Promise<PrismaClient> {
  ensureSqliteDirectory(target.file);
  // The key is tried on a connection of our own first: through Prisma, a wrong key would surface
  // as "Invalid `prisma.$executeRawUnsafe()` invocation" with the advice lost.
  const probe = new Database(target.file, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    unlockSqlite(probe, target.file, target.encryptionKey);
  } finally {
    probe.close();
  }
  // Busy timeout 0: the service's connection never sleeps in SQLite's busy handler on the event
  // loop; its lock waits are timers (withLockWaitsOffTheEventLoop).
  // Search's hot reads use the connection directly, with their statements kept (sqlite-reads.ts).
  let connection: StatementSource | undefined;
  const prisma = new SqlitePrismaClient({
    adapter: withLockWaitsOffTheEventLoop(adapterFactory(target, false, 0), (opened) => (connection = opened)),
    transactionOptions: { maxWait: TRANSACTION_MAX_WAIT_MS },
  });
  registerSqliteConnection(prisma, () => connection);
  await prisma.$executeRawUnsafe('PRAGMA foreign_keys = ON');
  // journal_mode returns a row, so it must go through a query, not an execute.
  await prisma.$queryRawUnsafe('PRAGMA journal_mode = WAL');
  await prisma.$executeRawUnsafe('PRAGMA synchronous = NORMAL');
  // Deleted and overwritten content is zeroed on disk, so forgotten text does not linger in freed
  // pages or cells of the file (forgetting promises the text is gone, not just unreachable).
  await prisma.$queryRawUnsafe('PRAGMA secure_delete = ON');
  // Checkpoints run on a thread of their own, not inside a COMMIT on the event loop (a big import's
  // COMMIT blocked it for the whole WAL copy): see sqlite-checkpointer.ts.
  await prisma.$queryRawUnsafe('PRAGMA wal_autocheckpoint = 0');
  const checkpointer = startSqliteCheckpointer(target, () => {
    void prisma.$queryRawUnsafe(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`).catch(() => undefined);
  });
  const disconnect = prisma.$disconnect.bind(prisma);
  prisma.$disconnect = async () => {
    await checkpointer.stop();
    await disconnect();
  };
  return prisma;
}

/**
 * The adapter the schema engine migrates through. better-sqlite3 refuses more than one statement
 * per prepared statement, but the engine sends whole migration scripts through `executeRaw` when
 * it replays them on the shadow database; those go to `executeScript` instead.
 *
 * On the real database each migration runs in one transaction with its `_prisma_migrations` row
 * (see atomic-migrations.ts), so a process killed while migrating leaves every migration applied
 * and recorded or not there at all. SQLite ignores `PRAGMA foreign_keys` inside a transaction, so
 * for a script that turns foreign keys off (Prisma's table rebuilds: dropping the old table must
 * not cascade) they are turned off before the transaction and on again after it.
 */
export function createSqliteMigrationAdapter(target: SqliteFile): SqlMigrationAwareDriverAdapterFactory {
  ensureSqliteDirectory(target.file);
  // Migrations run before anything else of the process starts: they may wait in SQLite itself.
  const base = adapterFactory(target, true, SQLITE_BUSY_TIMEOUT_MS);
  const wrap = (adapter: SqlDriverAdapter): SqlDriverAdapter => {
    return overrideMethods(adapter, {
      executeRaw: async (query) => {
        if (query.args.length === 0 && hasSeveralStatements(query.sql)) {
          await adapter.executeScript(query.sql);
          return 0;
        }
        return adapter.executeRaw(query);
      },
    });
  };
  return {
    provider: base.provider,
    adapterName: base.adapterName,
    connect: async () => withAtomicMigrations(wrap(await base.connect()), { begin: 'BEGIN IMMEDIATE', around: foreignKeysAround }),
    connectToShadowDb: async () => wrap(await base.connectToShadowDb()),
  };
}

const FOREIGN_KEYS_OFF = /^\s*PRAGMA\s+foreign_keys\s*=\s*(OFF|0|false|no)\s*;/im;

function foreignKeysAround(script: string): { before: string[]; after: string[] } {
  return FOREIGN_KEYS_OFF.test(script) ? { before: ['PRAGMA foreign_keys = OFF'], after: ['PRAGMA foreign_keys = ON'] } : { before: [], after: [] };
}

function hasSeveralStatements(sql: string): boolean {
  const trimmed = sql.trim().replace(/;\s*$/, '');
  return trimmed.includes(';');
}
