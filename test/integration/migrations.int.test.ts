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
import Database from 'better-sqlite3';

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
  fs.writeFileSync(
    file,
    models.replace(
      '  sourceTrust        Float     @default(1)\n',
      '  sourceTrust        Float     @default(1)\n  starred            Boolean   @default(false)\n',
    ),
  );
}

describe('migration runner on SQLite', () => {
  it('finds nothing to create: the committed migrations match the models', async () => {
    const created = await createMigration({
      provider: 'sqlite',
      adapterFactory: createSqliteMigrationAdapter({ file: path.join(tempDir(), 'scratch.db') }),
      name: 'check',
      prismaDir: copyPrismaDir(),
    });
    expect(created).toBeUndefined();
  });

  it('creates a migration from a model change and applies it to an existing database without losing data', async () => {
    const prismaDir = copyPrismaDir();
    const file = path.join(tempDir(), 'live.db');
    expect(await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir })).toHaveLength(
      readMigrations('sqlite').migrationDirectories.length,
    );
    const before = await createSqliteClient({ file });
    const scope = await before.scope.create({ data: { key: 'k', channel: 't' } });
    await before.memory.create({ data: { scopeId: scope.id, category: 'fact', content: 'keeps bees', confidence: 0.8 } });
    await before.$disconnect();

    addColumn(prismaDir);
    const created = await createMigration({
      provider: 'sqlite',
      adapterFactory: createSqliteMigrationAdapter({ file: path.join(tempDir(), 'scratch.db') }),
      name: 'add_starred',
      prismaDir,
    });
    expect(created?.name).toMatch(/^\d{14}_add_starred$/);
    const sql = fs.readFileSync(created!.file, 'utf8');
    expect(sql).toMatch(/starred/);

    const applied = await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir });
    expect(applied).toEqual([created!.name]);
    const after = await createSqliteClient({ file });
    const rows = await after.$queryRawUnsafe<Array<{ content: string; starred: number | bigint }>>('SELECT content, starred FROM "Memory"');
    expect(rows.map((r) => [r.content, Number(r.starred)])).toEqual([['keeps bees', 0]]);
    // The full-text triggers survive (SQLite rebuilds tables for some changes and drops their triggers).
    await after.memory.create({ data: { scopeId: scope.id, category: 'fact', content: 'plays the oboe', confidence: 0.8 } });
    const hits = await after.$queryRawUnsafe<Array<{ n: bigint }>>(`SELECT COUNT(*) AS n FROM search_fts WHERE search_fts MATCH 'oboe'`);
    expect(Number(hits[0]!.n)).toBe(1);
    await after.$disconnect();
  });

  it('refuses a broken migration with a clear error and leaves earlier data alone', async () => {
    const prismaDir = copyPrismaDir();
    const file = path.join(tempDir(), 'broken.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir });
    const dir = path.join(prismaDir, 'sqlite', 'migrations', '29990101000000_broken');
    fs.mkdirSync(dir);
    // Half of it would work: the first statement must not stay behind when the second fails.
    fs.writeFileSync(path.join(dir, 'migration.sql'), 'CREATE TABLE "Half" ("id" TEXT NOT NULL PRIMARY KEY);\nALTER TABLE "Nope" ADD COLUMN "x" TEXT;');
    for (let attempt = 0; attempt < 2; attempt++) {
      // The same clear error on every start until the migration is fixed (no "failed migration" record blocks it).
      await expect(applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir })).rejects.toMatchObject({
        code: 'storage.migration_failed',
        message: expect.stringMatching(/Could not apply the database migrations: .*Nope/),
      });
    }
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'Half'").all()).toEqual([]);
      expect(db.prepare("SELECT COUNT(*) AS n FROM _prisma_migrations WHERE migration_name = '29990101000000_broken'").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    fs.writeFileSync(path.join(dir, 'migration.sql'), 'CREATE TABLE "Half" ("id" TEXT NOT NULL PRIMARY KEY);');
    expect(await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir })).toEqual([
      '29990101000000_broken',
    ]);
  });

  it('applies each migration in one transaction with its record: a table rebuild keeps the rows that reference the table', async () => {
    // Apply up to the migration that rebuilds Memory, put a memory with a source in, then apply it:
    // inside a transaction SQLite ignores PRAGMA foreign_keys, so the runner turns them off
    // around it, or dropping the old table would cascade to the sources.
    const prismaDir = copyPrismaDir();
    const migrations = path.join(prismaDir, 'sqlite', 'migrations');
    const names = readMigrations('sqlite', prismaDir).migrationDirectories.map((m) => m.path);
    const rebuild = names.find((name) => fs.readFileSync(path.join(migrations, name, 'migration.sql'), 'utf8').includes('CREATE TABLE "new_Memory"'))!;
    const later = names.slice(names.indexOf(rebuild));
    const aside = tempDir();
    for (const name of later) fs.renameSync(path.join(migrations, name), path.join(aside, name));
    const file = path.join(tempDir(), 'rebuild.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir });
    const db = new Database(file);
    db.exec(`INSERT INTO Scope (id, key, channel, kind, createdAt, updatedAt) VALUES ('s', 'k', 't', 'user', 0, 0);
      INSERT INTO Episode (id, scopeId, channel, role, content, timestamp, contentHash, createdAt) VALUES ('e', 's', 't', 'user', 'I keep bees', 0, 'h', 0);
      INSERT INTO Memory (id, scopeId, category, content, confidence, updatedAt) VALUES ('m', 's', 'fact', 'keeps bees', 0.8, 0);
      INSERT INTO MemorySource (scopeId, memoryId, episodeId) VALUES ('s', 'm', 'e');`);
    db.close();
    for (const name of later) fs.renameSync(path.join(aside, name), path.join(migrations, name));
    expect(await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir })).toEqual(later);
    const after = new Database(file, { readonly: true });
    try {
      expect(after.prepare('SELECT memoryId, episodeId FROM MemorySource').all()).toEqual([{ memoryId: 'm', episodeId: 'e' }]);
      expect(after.pragma('foreign_key_check')).toEqual([]);
      expect(after.prepare('SELECT COUNT(*) AS n FROM _prisma_migrations WHERE finished_at IS NULL').get()).toEqual({ n: 0 });
    } finally {
      after.close();
    }
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
    const created = await createMigration({
      provider: 'postgres',
      adapterFactory: createPostgresMigrationAdapter(await createPostgresDatabase()),
      name: 'add_starred',
      prismaDir,
    });
    expect(fs.readFileSync(created!.file, 'utf8')).toMatch(/ALTER TABLE "Memory" ADD COLUMN\s+"starred" BOOLEAN NOT NULL DEFAULT false/);
    expect(await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(live), prismaDir })).toEqual([created!.name]);

    const client = new pg.Client({ connectionString: live });
    await client.connect();
    try {
      const columns = await client.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'Memory' AND column_name = 'starred'`);
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
