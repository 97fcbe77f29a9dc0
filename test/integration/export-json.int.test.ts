/**
 * JSON export and import on real databases: export -> import into an empty database -> export
 * gives the same bytes, on SQLite, on PostgreSQL and across them; the imported scope is searchable
 * by keyword at once and gets its vectors from the embedding worker without changing the export;
 * a bad document or a clash writes nothing; a copy under a new key gets new ids throughout; secrets
 * are redacted.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { exportScope, readScope } from '../../src/export/json-export';
import { parseScopeExport } from '../../src/export/import-validation';
import { importScope } from '../../src/export/json-import';
import { serializeScopeExport, type ScopeExport } from '../../src/export/scope-document';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createEmbeddingWorker } from '../../src/memory/embeddings/embedding-worker';
import { createInMemoryVectorIndex } from '../../src/vectors/indexes/in-memory-vector-index';
import { createIndexGuard } from '../../src/memory/vectors/index-guard';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase, type Database } from '../../src/storage/database';
import { createFullTextIndex } from '../../src/storage/full-text';
import { postgresAvailable, postgresDatabase, postgresSkipReason, sqliteDatabase } from '../support/databases';
import { seedScope, type SeededScope } from '../support/scope-fixture';

/** The ingest limits of a default configuration (EPISODE_MAX_BYTES 4 MiB). */
const LIMITS = { maxEpisodeBytes: 4 * 1024 * 1024 };

type DatabaseFactory = () => Promise<Config['database']>;

const kinds: Array<{ name: string; create: DatabaseFactory; skip?: string }> = [
  { name: 'SQLite', create: async () => sqliteDatabase() },
  { name: 'PostgreSQL', create: postgresDatabase, skip: postgresAvailable() ? undefined : postgresSkipReason() },
];

const opened: Database[] = [];
async function open(create: DatabaseFactory): Promise<Database> {
  const db = await openDatabase({ database: await create(), logger: createSilentLogger() });
  opened.push(db);
  return db;
}
afterAll(async () => {
  for (const db of opened) await db.close();
});

/** Every row count of a database, to prove a refused import wrote nothing. */
async function totals(db: Database): Promise<number[]> {
  const p = db.prisma;
  return Promise.all([
    p.scope.count(),
    p.episode.count(),
    p.episodeTag.count(),
    p.memory.count(),
    p.memorySource.count(),
    p.memoryLink.count(),
    p.auditEvent.count(),
    p.profile.count(),
    p.conversation.count(),
    p.entity.count(),
    p.digest.count(),
    p.sleepRun.count(),
  ]);
}

describe.each(kinds)('JSON export round trip on $name', ({ create, skip }) => {
  if (skip) {
    it.skip(`skipped: ${skip}`, () => undefined);
    return;
  }
  let source: Database;
  let seeded: SeededScope;
  let text: string;

  beforeAll(async () => {
    source = await open(create);
    seeded = await seedScope(source.prisma, 'ana');
    text = serializeScopeExport(await exportScope(source.prisma, seeded.scopeId));
  });

  it('exports everything, in a stable order, twice the same', async () => {
    const doc = JSON.parse(text) as ScopeExport;
    expect(doc).toMatchObject({ format: 'nocturne.scope-export', version: 1, scope: { key: 'ana', title: 'Ana', timezone: 'Europe/Madrid' } });
    expect(doc.episodes).toHaveLength(4);
    expect(doc.memories.map((m) => m.content).sort()).toEqual([
      'Ana drinks coffee every morning',
      'Ana drinks green tea',
      'Ana plays chess',
      'Ana works night shifts as a nurse',
    ]);
    const coffee = doc.memories.find((m) => m.id === seeded.ids.coffee)!;
    expect(coffee).toMatchObject({ active: false, supersededById: seeded.ids.tea, sourceEpisodeIds: [seeded.ids.e1] });
    expect(doc.memoryLinks.map((l) => l.kind).sort()).toEqual(['related', 'supersedes']);
    expect(doc.entities[0]!.observations).toHaveLength(1);
    expect(doc.profile?.soul).toContain('Ana drinks green tea');
    expect(doc.digests).toHaveLength(1);
    expect(doc.sleepRuns[0]!.stats).toEqual({ a: { x: 1.5, y: null }, created: 2, z: [3, 2, 1] });
    expect(Object.keys(doc.scope.settings as object)).toEqual(['a', 'memoryCap', 'sleepWindow']);
    expect(doc.auditEvents.length).toBeGreaterThanOrEqual(6);
    expect(doc.episodes.find((e) => e.id === seeded.ids.e1)!.importance).toBe(0.1 + 0.2);
    expect(text).not.toMatch(/embeddedWith|"provider"|claude-sonnet/);
    const ids = doc.episodes.map((e) => e.id);
    expect(ids).toEqual([...ids].sort());
    expect(serializeScopeExport(await exportScope(source.prisma, seeded.scopeId))).toBe(text);
  });

  it('export -> import into an empty database -> export is byte-identical; keyword search works at once', async () => {
    const target = await open(create);
    const result = await importScope(target.prisma, JSON.parse(text), LIMITS, {});
    expect(result).toMatchObject({ scopeId: seeded.scopeId, scopeKey: 'ana', mode: 'exact', counts: { episodes: 4, memories: 4, memoryLinks: 2, profile: 1 } });
    expect(serializeScopeExport(await exportScope(target.prisma, seeded.scopeId))).toBe(text);
    const hits = await createFullTextIndex(target.prisma, target.provider).search({
      scopeId: seeded.scopeId,
      kind: 'episode',
      query: 'nurse night shifts',
      limit: 5,
    });
    expect(hits.map((h) => h.id)).toContain(seeded.ids.e4);
    expect(await target.prisma.episode.count({ where: { embeddedWith: null } })).toBe(4);

    // The embedding worker gives every imported row its vector; the export does not change.
    const embedder = createHashEmbedder({ dimension: 32 });
    const index = createInMemoryVectorIndex();
    const guard = createIndexGuard({ index, embedder, prisma: target.prisma });
    await guard.init();
    const worker = createEmbeddingWorker({ prisma: target.prisma, embedder, index, guard, logger: createSilentLogger() });
    expect(await worker.drain()).toBe(8);
    expect(await index.count(seeded.scopeId)).toBe(8);
    expect(serializeScopeExport(await exportScope(target.prisma, seeded.scopeId))).toBe(text);
  });

  it('imports into an existing empty scope of that key, keeping the row ids', async () => {
    const target = await open(create);
    const empty = await target.prisma.scope.create({ data: { key: 'ana', channel: 'terminal' } });
    const result = await importScope(target.prisma, JSON.parse(text), LIMITS);
    expect(result.scopeId).toBe(empty.id);
    const again = JSON.parse(serializeScopeExport(await exportScope(target.prisma, empty.id))) as ScopeExport;
    const original = JSON.parse(text) as ScopeExport;
    expect({ ...again, scope: { ...again.scope, id: original.scope.id } }).toEqual(original);
  });

  it('refuses a corrupted document, naming the bad fields, and writes nothing', async () => {
    const target = await open(create);
    const before = await totals(target);
    const bad = JSON.parse(text) as ScopeExport & Record<string, unknown>;
    (bad.memories[1] as Record<string, unknown>).confidence = 'high';
    (bad.episodes[2] as Record<string, unknown>).timestamp = 'yesterday';
    await expect(importScope(target.prisma, bad, LIMITS)).rejects.toMatchObject({
      code: 'import.invalid_document',
      message: expect.stringMatching(/episodes\[2\]\.timestamp: must be an ISO 8601[\s\S]*memories\[1\]\.confidence: .*number/),
    });
    const dangling = JSON.parse(text) as ScopeExport;
    dangling.memoryLinks[0]!.toId = '00000000-0000-7000-8000-000000000000';
    await expect(importScope(target.prisma, dangling, LIMITS)).rejects.toThrow(
      /memoryLinks\[0\]\.toId: no memory 00000000-0000-7000-8000-000000000000 in the document/,
    );
    await expect(importScope(target.prisma, { ...JSON.parse(text), version: 2 }, LIMITS)).rejects.toThrow(/version: must be 1/);
    await expect(importScope(target.prisma, [], LIMITS)).rejects.toMatchObject({ code: 'import.invalid_document' });
    expect(await totals(target)).toEqual(before);
  });

  it('a clash found by the database mid-import rolls everything back', async () => {
    const target = await open(create);
    await importScope(target.prisma, JSON.parse(text), LIMITS);
    const before = await totals(target);
    // Same rows, another scope id and key: passes every check, then the first episode id clashes.
    const clash = JSON.parse(text) as ScopeExport;
    clash.scope.id = '00000000-0000-7000-8000-0000000000aa';
    clash.scope.key = 'ana-again';
    await expect(importScope(target.prisma, clash, LIMITS)).rejects.toMatchObject({ code: 'import.conflict' });
    expect(await target.prisma.scope.findUnique({ where: { key: 'ana-again' } })).toBeNull();
    expect(await totals(target)).toEqual(before);
    // The same export again: the scope has data.
    await expect(importScope(target.prisma, JSON.parse(text), LIMITS)).rejects.toThrow(/already has data/);
    expect(await totals(target)).toEqual(before);
  });

  it('imports a copy with new ids under a new key, references following', async () => {
    const target = await open(create);
    await importScope(target.prisma, JSON.parse(text), LIMITS);
    const result = await importScope(target.prisma, JSON.parse(text), LIMITS, { mode: 'copy', scopeKey: 'ana-copy' });
    expect(result.scopeId).not.toBe(seeded.scopeId);
    const copy = await readScope(target.prisma, result.scopeId);
    const original = parseScopeExport(JSON.parse(text), LIMITS);
    expect(copy.scope.key).toBe('ana-copy');
    const originalIds = new Set([...original.episodes, ...original.memories, ...original.auditEvents].map((r) => r.id));
    expect([...copy.episodes, ...copy.memories, ...copy.auditEvents].some((r) => originalIds.has(r.id))).toBe(false);
    const tea = copy.memories.find((m) => m.content === 'Ana drinks green tea')!;
    const coffee = copy.memories.find((m) => m.content === 'Ana drinks coffee every morning')!;
    expect(coffee.supersededById).toBe(tea.id);
    expect(copy.episodes.find((e) => e.id === tea.sourceEpisodeIds[0])!.content).toMatch(/green tea/);
    expect(copy.auditEvents.filter((a) => a.subjectId === tea.id).length).toBeGreaterThan(0);
    expect(JSON.stringify(copy.digests[0]!.items)).not.toContain(seeded.ids.tea);
    expect(copy.episodes.map((e) => e.content)).toEqual(original.episodes.map((e) => e.content));
    expect(copy.memories.map((m) => m.validFrom)).toEqual(original.memories.map((m) => m.validFrom));
  });
});

describe('JSON export across databases', () => {
  if (!postgresAvailable()) {
    it.skip(`skipped: ${postgresSkipReason()}`, () => undefined);
    return;
  }
  it('SQLite -> PostgreSQL -> SQLite gives the same bytes every time', async () => {
    const sqlite = await open(async () => sqliteDatabase());
    const { scopeId } = await seedScope(sqlite.prisma, 'ana');
    const text = serializeScopeExport(await exportScope(sqlite.prisma, scopeId));
    const pg = await open(postgresDatabase);
    await importScope(pg.prisma, JSON.parse(text), LIMITS);
    const fromPg = serializeScopeExport(await exportScope(pg.prisma, scopeId));
    expect(fromPg).toBe(text);
    const back = await open(async () => sqliteDatabase());
    await importScope(back.prisma, JSON.parse(fromPg), LIMITS);
    expect(serializeScopeExport(await exportScope(back.prisma, scopeId))).toBe(text);
  });
});

describe('secrets in an export', () => {
  it('are redacted, and redaction is stable across a round trip', async () => {
    const db = await open(async () => sqliteDatabase());
    const { scopeId } = await seedScope(db.prisma, 'ana', { withSecret: true });
    const raw = serializeScopeExport(await readScope(db.prisma, scopeId));
    expect(raw).toContain('sk-ant-api03-');
    const text = serializeScopeExport(await exportScope(db.prisma, scopeId));
    expect(text).not.toContain('sk-ant-api03-');
    expect(text).toContain('my key is [REDACTED]');
    const target = await open(async () => sqliteDatabase());
    await importScope(target.prisma, JSON.parse(text), LIMITS);
    expect(serializeScopeExport(await exportScope(target.prisma, scopeId))).toBe(text);
  });
});
