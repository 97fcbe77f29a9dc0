/**
 * Nocturne's own migration runner: applies the committed migrations of prisma/<provider>/migrations
 * and creates new ones, through the WebAssembly schema engine (no Prisma CLI, no download).
 *
 * The full-text tables (prisma/<provider>/search-index.sql) are managed outside Prisma's models;
 * they are declared external so the engine never proposes to drop them, and the search-index
 * script is appended to any new migration that rebuilds a table its triggers are attached to.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  isDriverAdapterError,
  type DriverAdapterError,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
  type SqlQuery,
} from '@prisma/driver-adapter-utils';
import { StorageError } from '../../shared/errors';
import { overrideMethods } from '../adapter-proxy';
import type { DatabaseProvider } from '../prisma';
import { startSchemaEngine, type MigrationList, type SchemaFile, type SchemaFilter } from './schema-engine';

/** The repository root (this file lives at src/storage/migrations/). */
export const PROJECT_ROOT = path.resolve(__dirname, '..', '..', '..');

/** Where the schema and migrations live; tests point the runner at a copy. */
export const DEFAULT_PRISMA_DIR = path.join(PROJECT_ROOT, 'prisma');

/** Tables Prisma's models do not describe (full-text search), per provider. */
const EXTERNAL_TABLES: Record<DatabaseProvider, string[]> = {
  sqlite: [
    'search_scope',
    'search_doc',
    'search_fts',
    'search_fts_data',
    'search_fts_idx',
    'search_fts_content',
    'search_fts_docsize',
    'search_fts_config',
    'sqlite_sequence',
  ],
  postgres: ['public.search_doc', 'public.search_scope'],
};

/** Tables whose rebuild drops the search triggers (SQLite only rebuilds tables; Scope's trigger drops its number). */
const SEARCHED_TABLES = ['Episode', 'Memory', 'Scope'];

const LOCK_FILE = 'migration_lock.toml';

/**
 * The code of the error a migration fails with when another connection kept the SQLite file
 * locked past the busy timeout; openDatabase waits and tries again on it (nothing was changed).
 */
export const MIGRATION_LOCKED = 'storage.migration_locked';

function providerDir(provider: DatabaseProvider, prismaDir = DEFAULT_PRISMA_DIR): string {
  return path.join(prismaDir, provider);
}

/**
 * The script that creates the full-text tables and their sync triggers, relative to the project
 * root (what `doctor` tells an operator to re-apply when a trigger is missing; it is idempotent).
 */
export function searchIndexScript(provider: DatabaseProvider): string {
  return path.relative(PROJECT_ROOT, path.join(providerDir(provider), 'search-index.sql'));
}

function migrationsDir(provider: DatabaseProvider, prismaDir?: string): string {
  return path.join(providerDir(provider, prismaDir), 'migrations');
}

function filters(provider: DatabaseProvider): SchemaFilter {
  return { externalTables: EXTERNAL_TABLES[provider], externalEnums: [] };
}

/** The schema files of one provider: its datasource + generator file and the shared models. */
export function schemaFiles(provider: DatabaseProvider, prismaDir?: string): SchemaFile[] {
  const dir = providerDir(provider, prismaDir);
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.prisma'))
    .sort()
    .map((name) => ({ path: path.join(dir, name), content: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/** The committed migrations of one provider, in order. */
export function readMigrations(provider: DatabaseProvider, prismaDir?: string): MigrationList {
  const baseDir = migrationsDir(provider, prismaDir);
  const names = fs.existsSync(baseDir)
    ? fs
        .readdirSync(baseDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
        .sort()
    : [];
  const lockPath = path.join(baseDir, LOCK_FILE);
  return {
    baseDir,
    lockfile: { path: LOCK_FILE, content: fs.existsSync(lockPath) ? fs.readFileSync(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: names.map((name) => {
      const file = path.join(baseDir, name, 'migration.sql');
      return {
        path: name,
        migrationFile: {
          path: 'migration.sql',
          content: fs.existsSync(file) ? { tag: 'ok' as const, value: fs.readFileSync(file, 'utf8') } : { tag: 'error' as const, value: `${file} is missing` },
        },
      };
    }),
  };
}

/**
 * The adapters report a lock held past the busy timeout (SQLite's SQLITE_BUSY) and a socket
 * timeout (pg's ETIMEDOUT) as the error kind `SocketTimeout`, which the WebAssembly engine cannot
 * read: it answered "unknown variant `SocketTimeout`" (WASM_ERROR), a message that names neither
 * the lock nor the file.
 */
function isTimeout(error: unknown): error is DriverAdapterError {
  return isDriverAdapterError(error) && error.cause.kind === 'SocketTimeout';
}

/**
 * Remembers the connections the engine opens so they can be closed when it is done (freeing the
 * engine does not close them, and an open pg pool keeps the process alive), and stands between
 * them and the engine for errors it cannot read: a timeout is recorded here and reaches the
 * engine as a plain error (which it reports as an opaque "External error"); {@link engineError}
 * then explains the recorded timeout instead.
 */
function trackConnections(factory: SqlMigrationAwareDriverAdapterFactory): {
  factory: SqlMigrationAwareDriverAdapterFactory;
  closeAll(): Promise<void>;
  /** The first timeout a connection reported, if any. */
  timeout(): DriverAdapterError | undefined;
} {
  const open: SqlDriverAdapter[] = [];
  let timeout: DriverAdapterError | undefined;
  const guard =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (error) {
        if (!isTimeout(error)) throw error;
        timeout ??= error;
        throw new Error(`the database did not answer in time: ${error.cause.originalMessage ?? error.message}`);
      }
    };
  const readable = (adapter: SqlDriverAdapter): SqlDriverAdapter =>
    overrideMethods(adapter, {
      queryRaw: guard((query: SqlQuery) => adapter.queryRaw(query)),
      executeRaw: guard((query: SqlQuery) => adapter.executeRaw(query)),
      executeScript: guard((script: string) => adapter.executeScript(script)),
    });
  return {
    factory: {
      provider: factory.provider,
      adapterName: factory.adapterName,
      connect: async () => {
        const adapter = await factory.connect();
        open.push(adapter);
        return readable(adapter);
      },
      connectToShadowDb: async () => readable(await factory.connectToShadowDb()),
    },
    async closeAll() {
      await Promise.all(open.splice(0).map((adapter) => adapter.dispose().catch(() => undefined)));
    },
    timeout: () => timeout,
  };
}

/** Why a failed engine call failed, in words an operator can act on. */
function engineError(action: string, error: unknown, provider: DatabaseProvider, timeout: DriverAdapterError | undefined): StorageError {
  // On SQLite the engine's first read takes its exclusive lock and keeps it until the connection
  // closes, so a lock timeout comes before any write of this run.
  if (timeout && provider === 'sqlite') {
    return new StorageError(`Could not ${action}: the database file stayed locked by another connection for the whole busy timeout. Nothing was changed.`, {
      code: MIGRATION_LOCKED,
      cause: timeout,
      hint: 'Migrations need the file alone: close the other process that has it open (another Nocturne process, a CLI command, a sqlite3 shell, a backup or monitoring reader) and start again.',
    });
  }
  if (timeout) {
    return new StorageError(`Could not ${action}: the database server did not answer in time. The migration that was running was rolled back.`, {
      code: 'storage.migration_failed',
      cause: timeout,
      hint: 'Check that the PostgreSQL server is running and reachable (DATABASE_URL), then start again.',
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StorageError(`Could not ${action}: ${message.split('\n')[0]}`, {
    code: 'storage.migration_failed',
    cause: error,
    hint: 'Run `npm run cli -- doctor` for details; the database was left as it was before this migration.',
  });
}

/**
 * Applies every committed migration the database has not seen yet; returns their names.
 * Each migration runs in one transaction together with its `_prisma_migrations` record, on both
 * databases (the adapters see to it, atomic-migrations.ts): a process killed while migrating
 * leaves each migration applied or absent, and a migration that fails leaves nothing, so the
 * next start applies it again (and reports the same error until it is fixed).
 */
export async function applyPendingMigrations(params: {
  provider: DatabaseProvider;
  adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  prismaDir?: string;
  onLog?: (line: string) => void;
}): Promise<string[]> {
  const connections = trackConnections(params.adapterFactory);
  try {
    const engine = await startSchemaEngine({ files: schemaFiles(params.provider, params.prismaDir), adapterFactory: connections.factory, onLog: params.onLog });
    try {
      const result = await engine.applyMigrations({ migrationsList: readMigrations(params.provider, params.prismaDir), filters: filters(params.provider) });
      return result.appliedMigrationNames;
    } catch (error) {
      throw engineError('apply the database migrations', error, params.provider, connections.timeout());
    } finally {
      engine.free();
    }
  } finally {
    await connections.closeAll();
  }
}

export interface CreatedMigration {
  readonly provider: DatabaseProvider;
  readonly name: string;
  readonly file: string;
}

/**
 * Creates a migration for one provider from the difference between the committed migrations and
 * the models, on a scratch database given by `adapterFactory` (it is migrated up to date first).
 * Returns undefined when the models need no change. `directoryName` makes both providers use one
 * name for one change.
 */
export async function createMigration(params: {
  provider: DatabaseProvider;
  adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  name: string;
  directoryName?: string;
  prismaDir?: string;
  onLog?: (line: string) => void;
}): Promise<CreatedMigration | undefined> {
  const { provider, prismaDir } = params;
  const files = schemaFiles(provider, prismaDir);
  const connections = trackConnections(params.adapterFactory);
  const engine = await startSchemaEngine({ files, adapterFactory: connections.factory, onLog: params.onLog });
  try {
    const migrationsList = readMigrations(provider, prismaDir);
    await engine.applyMigrations({ migrationsList, filters: filters(provider) });
    // devDiagnostic replays the history on the shadow database and caches the result that
    // createMigration diffs against; createMigration cannot reach the shadow database itself.
    const diagnostic = await engine.devDiagnostic({ migrationsList, filters: filters(provider) });
    if (diagnostic.action.tag === 'reset') {
      throw new StorageError(`The scratch database disagrees with the migration history: ${diagnostic.action.reason ?? 'unknown reason'}`, {
        code: 'storage.migration_drift',
      });
    }
    const result = await engine.createMigration({
      draft: false,
      migrationName: params.name,
      migrationsList,
      schema: { files },
      filters: filters(provider),
    });
    if (!result.migrationScript) return undefined;
    let script = result.migrationScript;
    const isFirst = migrationsList.migrationDirectories.length === 0;
    const rebuildsSearched = SEARCHED_TABLES.some((table) => script.includes(`CREATE TABLE "new_${table}"`));
    if (isFirst || rebuildsSearched) {
      script += `\n-- Full-text search (prisma/${provider}/search-index.sql)\n${fs.readFileSync(path.join(providerDir(provider, prismaDir), 'search-index.sql'), 'utf8')}`;
    }
    const directory = path.join(migrationsDir(provider, prismaDir), params.directoryName ?? result.generatedMigrationName);
    fs.mkdirSync(directory, { recursive: true });
    const file = path.join(directory, 'migration.sql');
    fs.writeFileSync(file, script);
    const lockPath = path.join(migrationsDir(provider, prismaDir), LOCK_FILE);
    if (!fs.existsSync(lockPath)) {
      fs.writeFileSync(
        lockPath,
        `# Written by Nocturne's migration runner; keep it in version control.\nprovider = "${provider === 'postgres' ? 'postgresql' : 'sqlite'}"\n`,
      );
    }
    return { provider, name: path.basename(directory), file };
  } catch (error) {
    if (error instanceof StorageError) throw error;
    throw engineError(`create the ${provider} migration "${params.name}"`, error, provider, connections.timeout());
  } finally {
    engine.free();
    await connections.closeAll();
  }
}
