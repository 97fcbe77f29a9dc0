/**
 * SQLite through better-sqlite3: the embedded default. One file under DATA_DIR, WAL mode so
 * readers never wait for the writer, a busy timeout so two processes on one file queue instead
 * of failing, foreign keys on (cascading deletes are how /forget reaches every row), and
 * secure_delete on (what /forget deletes is zeroed in the file, not left in free pages).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { PrismaClient as SqlitePrismaClient } from '../generated/sqlite/client';
import { overrideMethods } from './adapter-proxy';
import type { PrismaClient } from './prisma';

/** How long a connection waits for a lock held by another connection or process. */
export const SQLITE_BUSY_TIMEOUT_MS = 10_000;

function adapterFactory(file: string, shadow: boolean): PrismaBetterSqlite3 {
  return new PrismaBetterSqlite3(
    { url: `file:${file}`, timeout: SQLITE_BUSY_TIMEOUT_MS },
    shadow ? { shadowDatabaseUrl: ':memory:' } : undefined,
  );
}

/** Creates the folder of the database file; SQLite creates the file itself. */
export function ensureSqliteDirectory(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
}

/** A Prisma client on the SQLite file, with the pragmas Nocturne relies on. */
export async function createSqliteClient(file: string): Promise<PrismaClient> {
  ensureSqliteDirectory(file);
  const prisma = new SqlitePrismaClient({ adapter: adapterFactory(file, false) });
  await prisma.$executeRawUnsafe('PRAGMA foreign_keys = ON');
  // journal_mode returns a row, so it must go through a query, not an execute.
  await prisma.$queryRawUnsafe('PRAGMA journal_mode = WAL');
  await prisma.$executeRawUnsafe('PRAGMA synchronous = NORMAL');
  // Deleted and overwritten content is zeroed on disk, so forgotten text does not linger in freed
  // pages or cells of the file (forgetting promises the text is gone, not just unreachable).
  await prisma.$queryRawUnsafe('PRAGMA secure_delete = ON');
  return prisma;
}

/**
 * The adapter the schema engine migrates through. better-sqlite3 refuses more than one statement
 * per prepared statement, but the engine sends whole migration scripts through `executeRaw` when
 * it replays them on the shadow database; those go to `executeScript` instead.
 */
export function createSqliteMigrationAdapter(file: string): SqlMigrationAwareDriverAdapterFactory {
  ensureSqliteDirectory(file);
  const base = adapterFactory(file, true);
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
    connect: async () => wrap(await base.connect()),
    connectToShadowDb: async () => wrap(await base.connectToShadowDb()),
  };
}

function hasSeveralStatements(sql: string): boolean {
  const trimmed = sql.trim().replace(/;\s*$/, '');
  return trimmed.includes(';');
}
