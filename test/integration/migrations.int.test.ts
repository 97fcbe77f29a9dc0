/**
 * The offline migration runner against real databases: committed migrations match the models,
 * a model change becomes a migration for both providers, and applying it keeps the data and the
 * full-text index working.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { applyPendingMigrations, createMigration, DEFAULT_PRISMA_DIR, readMigrations } from '../../src/storage/migrations/migration-runner';
import { createPostgresMigrationAdapter } from '../../src/storage/postgres-driver';
import { createSqliteClient, createSqliteMigrationAdapter } from '../../src/storage/sqlite-driver';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import pg from 'pg';

function copyPrismaDir(): string {
  const dir = path.join(tempDir(), 'prisma');
  fs.cpSync(DEFAULT_PRISMA_DIR, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

/** Adds a column to Memory in a copy of the models (the links in provider folders follow it). */
function addColumn(prismaDir: string): void {
  const file = path.join(prismaDir, 'models.prisma');
  const models = fs.readFileSync(file, 'utf8');
  expect(models).toContain('  sourceTrust        Float     @default(1)\n');
  fs.writeFileSync(file, models.replace('  sourceTrust        Float     @default(1)\n', '  sourceTrust        Float     @default(1)\n  pinned             Boolean   @default(false)\n'));
}

describe('migration runner on SQLite', () => {
  it('finds nothing to create: the committed migrations match the models', async () => {
    const created = await createMigration({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(path.join(tempDir(), 'scratch.db')), name: 'check', prismaDir: copyPrismaDir() });
    expect(created).toBeUndefined();
  });

  it('creates a migration from a model change and applies it to an existing database without losing data', async () => {
    const prismaDir = copyPrismaDir();
    const file = path.join(tempDir(), 'live.db');
    expect(await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(file), prismaDir })).toHaveLength(readMigrations('sqlite').migrationDirectories.length);
    const before = await createSqliteClient(file);
    const scope = await before.scope.create({ data: { key: 'k', channel: 't' } });
    await before.memory.create({ data: { scopeId: scope.id, category: 'fact', content: 'keeps bees', confidence: 0.8 } });
    await before.$disconnect();

    addColumn(prismaDir);
    const created = await createMigration({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(path.join(tempDir(), 'scratch.db')), name: 'add_pinned', prismaDir });
    expect(created?.name).toMatch(/^\d{14}_add_pinned$/);
    const sql = fs.readFileSync(created!.file, 'utf8');
    expect(sql).toMatch(/pinned/);

    const applied = await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(file), prismaDir });
    expect(applied).toEqual([created!.name]);
    const after = await createSqliteClient(file);
    const rows = await after.$queryRawUnsafe<Array<{ content: string; pinned: number | bigint }>>('SELECT content, pinned FROM "Memory"');
    expect(rows.map((r) => [r.content, Number(r.pinned)])).toEqual([['keeps bees', 0]]);
    // The full-text triggers survive (SQLite rebuilds tables for some changes and drops their triggers).
    await after.memory.create({ data: { scopeId: scope.id, category: 'fact', content: 'plays the oboe', confidence: 0.8 } });
    const hits = await after.$queryRawUnsafe<Array<{ n: bigint }>>(`SELECT COUNT(*) AS n FROM search_fts WHERE search_fts MATCH 'oboe'`);
    expect(Number(hits[0]!.n)).toBe(1);
    await after.$disconnect();
  });

  it('refuses a broken migration with a clear error and leaves earlier data alone', async () => {
    const prismaDir = copyPrismaDir();
    const file = path.join(tempDir(), 'broken.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(file), prismaDir });
    const dir = path.join(prismaDir, 'sqlite', 'migrations', '29990101000000_broken');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'migration.sql'), 'ALTER TABLE "Nope" ADD COLUMN "x" TEXT;');
    await expect(applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter(file), prismaDir })).rejects.toMatchObject({
      code: 'storage.migration_failed',
      message: expect.stringMatching(/Could not apply the database migrations/),
    });
  });
});

const pgDescribe = postgresAvailable() ? describe : describe.skip;

pgDescribe('migration runner on PostgreSQL', () => {
  it('finds nothing to create, then turns a model change into a migration that applies', async () => {
    const prismaDir = copyPrismaDir();
    const scratch = await createPostgresDatabase();
    expect(await createMigration({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(scratch), name: 'check', prismaDir })).toBeUndefined();

    const live = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(live), prismaDir });
    addColumn(prismaDir);
    const created = await createMigration({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(await createPostgresDatabase()), name: 'add_pinned', prismaDir });
    expect(fs.readFileSync(created!.file, 'utf8')).toMatch(/ALTER TABLE "Memory" ADD COLUMN\s+"pinned" BOOLEAN NOT NULL DEFAULT false/);
    expect(await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(live), prismaDir })).toEqual([created!.name]);

    const client = new pg.Client({ connectionString: live });
    await client.connect();
    try {
      const columns = await client.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'Memory' AND column_name = 'pinned'`);
      expect(columns.rowCount).toBe(1);
      // No shadow database is left behind.
      const shadows = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE 'nocturne_shadow_%'`);
      expect(shadows.rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });
});

if (!postgresAvailable()) {
  describe('migration runner on PostgreSQL', () => {
    it.skip(`skipped: ${postgresSkipReason()}`, () => undefined);
  });
}
