/**
 * Opens the configured database: applies pending migrations, then hands out a Prisma client.
 * The composition root and the CLI call {@link openDatabase} once and share the result.
 */
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { Config } from '../config/load-config';
import { StorageError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { applyPendingMigrations, readMigrations } from './migrations/migration-runner';
import { retryWhileLocked } from './migrations/retry-while-locked';
import type { DatabaseProvider, PrismaClient } from './prisma';
import { tuneWasmTiering } from './wasm-tiering';

export interface Database {
  readonly provider: DatabaseProvider;
  readonly prisma: PrismaClient;
  /** Names of the migrations applied while opening (empty when already up to date). */
  readonly appliedMigrations: readonly string[];
  close(): Promise<void>;
}

interface ProviderDriver {
  migrationAdapter(): SqlMigrationAwareDriverAdapterFactory;
  client(): Promise<PrismaClient>;
}

/**
 * The configured provider's driver, loaded when the store is opened: a SQLite store never loads
 * node-postgres and the generated PostgreSQL client, nor a PostgreSQL one the SQLite adapter.
 */
async function driverFor(database: Config['database']): Promise<ProviderDriver> {
  tuneWasmTiering();
  if (database.provider === 'sqlite') {
    const { createSqliteClient, createSqliteMigrationAdapter } = await import('./sqlite-driver');
    return {
      migrationAdapter: () => createSqliteMigrationAdapter(database),
      client: () => createSqliteClient(database),
    };
  }
  const { createPostgresClient, createPostgresMigrationAdapter } = await import('./postgres-driver');
  return {
    migrationAdapter: () => createPostgresMigrationAdapter(database.url),
    client: async () => createPostgresClient(database.url),
  };
}

/** A human description of where the data lives, without credentials. */
export function describeDatabase(database: Config['database']): string {
  if (database.provider === 'sqlite') return `SQLite ${database.file}${database.encryptionKey ? ' (encrypted)' : ''}`;
  try {
    const url = new URL(database.url);
    return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/**
 * Whether the database lacks any committed migration. Read with a plain query, so a second
 * process (the CLI next to a running service) starts without the schema engine, which needs a
 * lock the running service's connection holds on SQLite. Any doubt (no history table yet, a
 * failed or rolled-back migration) answers yes and leaves the decision to the engine.
 */
async function hasPendingMigrations(prisma: PrismaClient, provider: Database['provider']): Promise<boolean> {
  const wanted = readMigrations(provider).migrationDirectories.map((m) => m.path);
  try {
    const rows = await prisma.$queryRawUnsafe<Array<{ migration_name: string }>>(
      'SELECT "migration_name" FROM "_prisma_migrations" WHERE "finished_at" IS NOT NULL AND "rolled_back_at" IS NULL',
    );
    const done = new Set(rows.map((r) => r.migration_name));
    return wanted.some((name) => !done.has(name));
  } catch {
    return true;
  }
}

/** Applies pending migrations (unless `migrate: false`) and connects. */
export async function openDatabase(params: { database: Config['database']; logger: Logger; migrate?: boolean }): Promise<Database> {
  const { database, logger } = params;
  const driver = await driverFor(database);
  let applied: string[] = [];
  let prisma = await driver.client();
  if (params.migrate !== false && (await hasPendingMigrations(prisma, database.provider))) {
    await prisma.$disconnect().catch(() => undefined);
    const started = Date.now();
    try {
      const migrate = () => applyPendingMigrations({ provider: database.provider, adapterFactory: driver.migrationAdapter() });
      applied = database.provider === 'sqlite' ? await retryWhileLocked(database.file, logger, migrate) : await migrate();
    } catch (error) {
      if (error instanceof StorageError) throw error;
      throw new StorageError(`Cannot reach the database (${describeDatabase(database)}): ${(error as Error).message}`, {
        code: 'storage.unreachable',
        cause: error,
        hint: 'Check DB_PROVIDER and DATABASE_URL, and that the server is running.',
      });
    }
    if (applied.length > 0) logger.info('applied database migrations', { migrations: applied, ms: Date.now() - started });
    prisma = await driver.client();
  }
  try {
    await prisma.$queryRawUnsafe('SELECT 1');
  } catch (error) {
    await prisma.$disconnect().catch(() => undefined);
    throw new StorageError(`Cannot reach the database (${describeDatabase(database)})`, {
      code: 'storage.unreachable',
      cause: error,
      hint: 'Check DB_PROVIDER and DATABASE_URL, and that the server is running.',
    });
  }
  return {
    provider: database.provider,
    prisma,
    appliedMigrations: applied,
    close: () => prisma.$disconnect(),
  };
}
