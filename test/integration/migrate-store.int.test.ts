/**
 * Store migration from an embedded store (a SQLite file + a sqlite-vec file, vectors made by the
 * embedding worker) to a real PostgreSQL database with its own sqlite-vec index (and to another
 * SQLite file, so the logic is covered where PostgreSQL is missing): counts per scope and table,
 * vectors carried over instead of re-embedded, a rerun that changes nothing, a catch-up run after
 * the source got a new message, a conflict when the target was written to; and once through the
 * real CLI. A person's reminders (one still to come, one sent) and a chat linked into their scope
 * move with them: the pending reminder stays pending and the linked identity still resolves to
 * the joined scope on the target.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { readScope } from '../../src/export/json-export';
import { MIGRATED_TABLES, migrateStore, type MigrationReport } from '../../src/export/migrate-store';
import { serializeScopeExport } from '../../src/export/scope-document';
import { createEmbeddingWorker } from '../../src/memory/embeddings/embedding-worker';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createIndexGuard } from '../../src/memory/vectors/index-guard';
import { createSqliteVecVectorIndex } from '../../src/vectors/indexes/sqlite-vec-vector-index';
import type { VectorIndex } from '../../src/memory/vectors/vector-index';
import { loadConfig } from '../../src/config/load-config';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase, type Database } from '../../src/storage/database';
import type { PrismaClient } from '../../src/storage/prisma';
import { createScopeRepository } from '../../src/storage/scope-repository';
import { createScopeDirectory } from '../../src/memory/scopes/scope-directory';
import { createIdentityScopes } from '../../src/memory/scopes/identity-links';
import { createPostgresDatabase, postgresAvailable, postgresDatabase, postgresSkipReason, sqliteDatabase, tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';
import { seedScope } from '../support/scope-fixture';

const embedder = createHashEmbedder({ dimension: 48 });
/** A terminal user whose messages were joined into another person's scope. */
const LINKED_IDENTITY = 'terminal:alice';
const PENDING_DUE = new Date('2099-03-01T09:00:00Z');

/** What the person asked to be reminded of, one still to come and one already sent, and a chat linked into the scope. */
async function seedRemindersAndLink(prisma: PrismaClient, scopeId: string): Promise<void> {
  await prisma.reminder.create({ data: { scopeId, text: 'Call the dentist', dueAt: PENDING_DUE, channel: 'terminal' } });
  await prisma.reminder.create({
    data: {
      scopeId,
      text: 'Water the plants',
      dueAt: new Date('2024-02-01T08:00:00Z'),
      channel: 'terminal',
      status: 'sent',
      attempts: 1,
      sentAt: new Date('2024-02-01T08:00:01Z'),
    },
  });
  await prisma.identityLink.create({ data: { identityKey: LINKED_IDENTITY, scopeId, state: 'linked' } });
}

/** The scope key the identity's messages go to on this store (what a message from it resolves to). */
async function resolvedKey(prisma: PrismaClient, identityKey: string): Promise<string> {
  const directory = createScopeDirectory(prisma, createScopeRepository(prisma));
  const identities = createIdentityScopes({ prisma, directory, owner: {} });
  return (await identities.resolve({ key: identityKey, channel: 'terminal', kind: 'user' })).key;
}
const identity = { embedder: embedder.name, dimension: embedder.dimension };

const targets: Array<{ name: string; create: () => Promise<Config['database']>; skip?: string }> = [
  { name: 'PostgreSQL', create: postgresDatabase, skip: postgresAvailable() ? undefined : postgresSkipReason() },
  { name: 'SQLite', create: async () => sqliteDatabase() },
];

describe.each(targets)('migrate-store: SQLite + sqlite-vec -> $name + sqlite-vec', ({ create, skip }) => {
  if (skip) {
    it.skip(`skipped: ${skip}`, () => undefined);
    return;
  }
  const dir = tempDir();
  let source: Database;
  let target: Database;
  let sourceIndex: VectorIndex;
  let targetIndex: VectorIndex;
  const scopeIds: Record<string, string> = {};
  let first: MigrationReport;

  const run = () =>
    migrateStore({
      source: { prisma: source.prisma, provider: source.provider, index: sourceIndex },
      target: { prisma: target.prisma, provider: target.provider, index: targetIndex },
      embedder: identity,
      sharedIndex: false,
    });

  beforeAll(async () => {
    source = await openDatabase({ database: sqliteDatabase(dir), logger: createSilentLogger() });
    scopeIds.ana = (await seedScope(source.prisma, 'ana')).scopeId;
    scopeIds.bob = (await seedScope(source.prisma, 'bob')).scopeId;
    await seedRemindersAndLink(source.prisma, scopeIds.ana!);
    await source.prisma.llmCall.create({ data: { purpose: 'doctor', provider: 'ollama', model: 'llama3.2', status: 'ok' } });
    sourceIndex = createSqliteVecVectorIndex({ file: path.join(dir, 'vectors.db'), dimension: embedder.dimension });
    const guard = createIndexGuard({ index: sourceIndex, embedder, prisma: source.prisma });
    await guard.init();
    await createEmbeddingWorker({ prisma: source.prisma, embedder, index: sourceIndex, guard, logger: createSilentLogger() }).drain();
    // One message arrives after the last embedding run: it has no vector yet anywhere.
    await source.prisma.episode.create({
      data: {
        scopeId: scopeIds.ana!,
        channel: 'terminal',
        role: 'user',
        content: 'Pending message',
        timestamp: new Date('2024-02-04T10:00:00Z'),
        contentHash: 'h-pending',
      },
    });

    target = await openDatabase({ database: await create(), logger: createSilentLogger() });
    targetIndex = createSqliteVecVectorIndex({ file: path.join(tempDir(), 'target-vectors.db'), dimension: embedder.dimension });
    first = await run();
  });
  afterAll(async () => {
    await sourceIndex?.close();
    await targetIndex?.close();
    await source?.close();
    await target?.close();
  });

  it('copies every scope, verifies counts per table, and reuses the vectors', async () => {
    expect(first.ok).toBe(true);
    expect(first.vectors.plan).toBe('copy');
    // Scopes in id order (time-ordered ids: ana was made first).
    expect(first.scopes.map((s) => [s.key, s.status, s.verified])).toEqual([
      ['ana', 'copied', true],
      ['bob', 'copied', true],
    ]);
    const ana = first.scopes.find((s) => s.key === 'ana')!;
    expect(ana.counts.episodes).toEqual({ source: 5, target: 5 });
    expect(ana.counts.memories).toEqual({ source: 4, target: 4 });
    expect(ana.counts.llmCalls).toEqual({ source: 1, target: 1 });
    expect(ana.counts.searchIndex).toEqual({ source: 9, target: 9 });
    // The reminder still to come fires on the new store; the sent one stays sent.
    const reminders = await target.prisma.reminder.findMany({ where: { scopeId: scopeIds.ana! }, orderBy: { dueAt: 'asc' } });
    expect(reminders.map((r) => [r.text, r.status, r.attempts])).toEqual([
      ['Water the plants', 'sent', 1],
      ['Call the dentist', 'pending', 0],
    ]);
    expect(reminders[1]!.dueAt.toISOString()).toBe(PENDING_DUE.toISOString());
    // Alice's terminal still speaks into Ana's scope, not into a new scope of her own.
    expect(await resolvedKey(target.prisma, LINKED_IDENTITY)).toBe('ana');
    expect(await target.prisma.scope.count({ where: { key: LINKED_IDENTITY } })).toBe(0);
    expect(ana.counts.reminders).toEqual({ source: 2, target: 2 });
    expect(ana.counts.identityLinks).toEqual({ source: 1, target: 1 });
    for (const table of MIGRATED_TABLES) expect(ana.counts[table].source).toBe(ana.counts[table].target);
    // 4 episodes + 4 memories had vectors; the pending message is left to the embedding worker.
    expect(ana.vectorsReused).toBe(8);
    expect(ana.pendingEmbeddings).toBe(1);
    expect(first.unscopedLlmCalls).toEqual({ source: 1, target: 1, copied: 1 });
    expect(await targetIndex.count(scopeIds.ana!)).toBe(8);
    // The copied vectors are the source's: searching the target with a source vector finds its row.
    const [record] = await sourceIndex.get(scopeIds.ana!, [
      (await source.prisma.episode.findFirstOrThrow({ where: { scopeId: scopeIds.ana!, externalId: 'm4' } })).id,
    ]);
    const [hit] = await targetIndex.search({ scopeId: scopeIds.ana!, vector: record!.vector, limit: 1 });
    expect(hit).toMatchObject({ id: record!.id, kind: 'episode' });
    expect(hit!.score).toBeCloseTo(1, 4);
    expect(serializeScopeExport(await readScope(target.prisma, scopeIds.ana!))).toBe(serializeScopeExport(await readScope(source.prisma, scopeIds.ana!)));
    expect(await target.prisma.memory.count({ where: { scopeId: scopeIds.ana!, embeddedWith: identity.embedder } })).toBe(4);
  });

  it('a rerun changes nothing', async () => {
    const again = await run();
    expect(again.ok).toBe(true);
    expect(again.scopes.map((s) => s.status)).toEqual(['unchanged', 'unchanged']);
    expect(again.scopes.map((s) => s.vectorsReused)).toEqual([0, 0]);
    expect(again.unscopedLlmCalls.copied).toBe(0);
    expect(again.scopes.map((s) => s.counts)).toEqual(first.scopes.map((s) => s.counts));
  });

  it('catches up with a source that changed, and refuses to overwrite a target that was written to', async () => {
    await source.prisma.episode.create({
      data: {
        scopeId: scopeIds.ana!,
        channel: 'terminal',
        role: 'user',
        content: 'One more',
        timestamp: new Date('2024-02-05T10:00:00Z'),
        contentHash: 'h-more',
      },
    });
    await target.prisma.episode.create({
      data: {
        scopeId: scopeIds.bob!,
        channel: 'terminal',
        role: 'user',
        content: 'Written to the target',
        timestamp: new Date('2024-02-05T10:00:00Z'),
        contentHash: 'h-target',
      },
    });
    const report = await run();
    expect(report.ok).toBe(false);
    const ana = report.scopes.find((s) => s.key === 'ana')!;
    expect(ana).toMatchObject({ status: 'updated', verified: true, counts: expect.objectContaining({ episodes: { source: 6, target: 6 } }) });
    // Replaced rows are marked again from the source's vectors (8), the two new messages stay pending.
    expect(ana.vectorsReused).toBe(8);
    expect(ana.pendingEmbeddings).toBe(2);
    const bob = report.scopes.find((s) => s.key === 'bob')!;
    expect(bob).toMatchObject({ status: 'conflict', verified: false, problem: expect.stringContaining('1 episodes') });
    expect(await target.prisma.episode.count({ where: { scopeId: scopeIds.bob!, content: 'Written to the target' } })).toBe(1);
  });
});

describe('migrate-store (CLI): SQLite -> PostgreSQL', () => {
  if (!postgresAvailable()) {
    it.skip(`skipped: ${postgresSkipReason()}`, () => undefined);
    return;
  }
  it('copies, verifies and says what to set next; a rerun reports every scope unchanged', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const config = loadConfig({ env: { DATA_DIR: dataDir }, envFile: false });
    const db = await openDatabase({ database: config.database, logger: createSilentLogger() });
    const { scopeId } = await seedScope(db.prisma, 'ana');
    await seedRemindersAndLink(db.prisma, scopeId);
    await db.close();
    const url = await createPostgresDatabase();
    const env = cleanEnv({ DATA_DIR: dataDir });
    const args = ['migrate-store', '--to', 'postgres', '--database-url', url, '--vectors', 'sqlite-vec', '--vectors-file', path.join(dataDir, 'pg-vectors.db')];

    const result = await runCli(args, env);
    expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^vectors: re-embed \(the source has no vector index/);
    expect(result.stdout).toMatch(/^ana +copied +episodes 4\/4 +memories 4\/4 +auditEvents \d+\/\d+ +llmCalls 1\/1 +vectors reused 0, pending 8 +verified$/m);
    expect(result.stdout).toContain('next: stop the service, set DB_PROVIDER=postgres DATABASE_URL=<the target URL> VECTOR_STORE=sqlite-vec');
    expect(result.stdout + result.stderr).not.toContain(new URL(url).password || '\u0000');

    const rerun = await runCli([...args, '--json'], env);
    expect(rerun.code).toBe(0);
    const report = JSON.parse(rerun.stdout) as MigrationReport;
    expect(report.scopes.map((s) => [s.key, s.status, s.verified])).toEqual([['ana', 'unchanged', true]]);

    // The service on the new store: the link still joins Alice's terminal to Ana's memory.
    const onTarget = cleanEnv({ DATA_DIR: dataDir, DB_PROVIDER: 'postgres', DATABASE_URL: url });
    const links = await runCli(['link', 'list'], onTarget);
    expect({ code: links.code, stdout: links.stdout.trim() }).toEqual({ code: 0, stdout: `${LINKED_IDENTITY} -> ana (linked)` });
    expect(report.scopes[0]!.counts).toMatchObject({ reminders: { source: 2, target: 2 }, identityLinks: { source: 1, target: 1 } });
  });
});
