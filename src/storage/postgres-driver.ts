/**
 * PostgreSQL through node-postgres (`pg`): the road to scale. The connection URL is split into
 * host, port, user, password and database because adapter-pg lets a connection string override
 * the database name, which would point the migration shadow database at the real one.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaClient as PostgresPrismaClient } from '../generated/postgres/client';
import { StorageError } from '../shared/errors';
import { overrideMethods } from './adapter-proxy';
import { withAtomicMigrations } from './migrations/atomic-migrations';
import type { PrismaClient } from './prisma';

/** Splits a postgresql:// URL into pool settings. */
export function poolConfigFromUrl(url: string): pg.PoolConfig {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StorageError('DATABASE_URL is not a valid postgresql:// URL', { code: 'storage.bad_url' });
  }
  const ssl = parsed.searchParams.get('sslmode');
  return {
    host: decodeURIComponent(parsed.hostname) || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 5432,
    user: decodeURIComponent(parsed.username) || undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || undefined,
    ssl: ssl === 'require' || ssl === 'verify-full' ? { rejectUnauthorized: ssl === 'verify-full' } : undefined,
    max: Number(parsed.searchParams.get('connection_limit') ?? 10),
    connectionTimeoutMillis: 10_000,
  };
}

/**
 * A Prisma client on PostgreSQL. The generated PostgreSQL client has the same model API as the
 * SQLite one (same models), so it is returned under the common type.
 */
export function createPostgresClient(url: string): PrismaClient {
  const adapter = new PrismaPg(poolConfigFromUrl(url));
  return new PostgresPrismaClient({ adapter }) as unknown as PrismaClient;
}

/**
 * adapter-pg splits scripts on every `;`, which breaks function bodies ($$ ... $$) in migrations.
 * PostgreSQL runs a multi-statement simple query as one implicit transaction, so the whole script
 * is sent as one.
 */
function withWholeScripts(adapter: Awaited<ReturnType<PrismaPg['connect']>>): SqlDriverAdapter {
  return overrideMethods(adapter as SqlDriverAdapter, {
    executeScript: async (script: string) => {
      await adapter.underlyingDriver().query(script);
    },
  });
}

type QueryResult = { fields?: Array<{ dataTypeID: number }> };

/**
 * The schema engine reads the catalog, where some columns have PostgreSQL's internal `"char"`
 * type (OID 18) that adapter-pg cannot map; they hold single ASCII characters, so they are
 * reported as text (OID 25).
 */
class CatalogFriendlyClient extends pg.Client {
  override query(...args: unknown[]): never {
    const patch = (result: unknown): unknown => {
      const fields = (result as QueryResult | undefined)?.fields;
      if (fields) for (const field of fields) if (field.dataTypeID === 18) field.dataTypeID = 25;
      return result;
    };
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = (error: unknown, result: unknown) => (last as (e: unknown, r: unknown) => void)(error, error ? result : patch(result));
      return (super.query as (...a: unknown[]) => never)(...args);
    }
    const returned = (super.query as (...a: unknown[]) => unknown)(...args);
    return (returned instanceof Promise ? returned.then(patch) : returned) as never;
  }
}

/**
 * The adapter the schema engine migrates through, with a shadow database that is created next to
 * the real one and dropped after its pool is closed (adapter-pg drops it first, which fails while
 * its own connections are still open).
 *
 * The real database is migrated over ONE connection, each migration in one transaction with its
 * `_prisma_migrations` row (see atomic-migrations.ts): a process killed between a script's commit
 * and the engine's "finished" mark would otherwise leave a failed migration that blocks every
 * later start.
 */
export function createPostgresMigrationAdapter(url: string): SqlMigrationAwareDriverAdapterFactory {
  const config: pg.PoolConfig = { ...poolConfigFromUrl(url), max: 2, Client: CatalogFriendlyClient as unknown as typeof pg.Client };
  const base = new PrismaPg(config);
  const single = new PrismaPg({ ...config, max: 1 });
  return {
    provider: base.provider,
    adapterName: base.adapterName,
    connect: async () => withAtomicMigrations(withWholeScripts(await single.connect()), { begin: 'BEGIN' }),
    connectToShadowDb: async (): Promise<SqlDriverAdapter> => {
      const admin = await base.connect();
      const database = `nocturne_shadow_${crypto.randomUUID().replace(/-/g, '')}`;
      await admin.executeScript(`CREATE DATABASE "${database}"`);
      const shadow = await new PrismaPg({ ...config, database }).connect();
      return overrideMethods(withWholeScripts(shadow), {
        dispose: async () => {
          await shadow.dispose();
          await admin.executeScript(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
          await admin.dispose();
        },
      });
    },
  };
}
