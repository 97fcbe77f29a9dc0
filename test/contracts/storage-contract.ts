/**
 * The storage contract: what every database provider must do, run against SQLite and
 * PostgreSQL alike (each *.int.test.ts file passes an initializer, LangGraph-style).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { createEpisodeService, type EpisodeService } from '../../src/memory/episodes/episode-service';
import { normalizeEpisode } from '../../src/memory/episodes/normalize';
import { openDatabase, type Database } from '../../src/storage/database';
import { createEpisodeRepository, type EpisodeRepository, type NewEpisode } from '../../src/storage/episode-repository';
import { createFullTextIndex, type FullTextIndex } from '../../src/storage/full-text';
import { createScopeRepository, type ScopeRepository } from '../../src/storage/scope-repository';
import { memoryLogger } from '../support/logger';

export interface StorageInitializer {
  readonly name: string;
  /** Why the suite cannot run here (it is then reported as skipped, with the reason). */
  readonly skip?: () => string | undefined;
  readonly database: () => Promise<Config['database']>;
}

function episode(content: string, extra: Partial<NewEpisode> = {}): NewEpisode {
  return { ...normalizeEpisode({ content }, { maxBytes: 4 << 20, defaultChannel: 'test', now: new Date('2024-05-01T10:00:00Z') }), ...extra };
}

export function describeStorageContract(init: StorageInitializer): void {
  const skipReason = init.skip?.();
  const suite = skipReason ? describe.skip : describe;
  if (skipReason) {
    describe(`storage contract: ${init.name}`, () => {
      it.skip(`skipped: ${skipReason}`, () => undefined);
    });
    return;
  }

  suite(`storage contract: ${init.name}`, () => {
    let database: Config['database'];
    let db: Database;
    let scopes: ScopeRepository;
    let episodes: EpisodeRepository;
    let fullText: FullTextIndex;
    let service: EpisodeService;

    beforeAll(async () => {
      const { logger } = memoryLogger();
      database = await init.database();
      db = await openDatabase({ database, logger });
      scopes = createScopeRepository(db.prisma);
      episodes = createEpisodeRepository(db.prisma);
      fullText = createFullTextIndex(db.prisma, db.provider);
      service = createEpisodeService({ scopes, episodes, logger, maxEpisodeBytes: 1 << 20 });
    });
    afterAll(async () => {
      await db?.close();
    });

    it('applies the committed migrations on a new database, and nothing on the second open', async () => {
      expect(db.appliedMigrations.length).toBeGreaterThan(0);
      const { logger } = memoryLogger();
      const again = await openDatabase({ database, logger });
      expect(again.appliedMigrations).toEqual([]);
      await again.close();
    });

    it('creates a scope once, whatever the number of callers', async () => {
      const all = await Promise.all(Array.from({ length: 5 }, () => scopes.ensure({ key: 'race', channel: 'test' })));
      expect(new Set(all.map((s) => s.id)).size).toBe(1);
    });

    it('stores a batch and skips what is already stored or repeated in the batch', async () => {
      const scope = await scopes.ensure({ key: 'batch', channel: 'test' });
      const batch = [episode('one', { externalId: 'a' }), episode('two', { externalId: 'b' }), episode('two again', { externalId: 'b' }), episode('no id')];
      const first = await episodes.insertMany(scope.id, batch);
      expect(first.inserted.map((e) => e.content)).toEqual(['one', 'two', 'no id']);
      expect(first.duplicates).toBe(1);
      const second = await episodes.insertMany(scope.id, batch.slice(0, 3));
      expect(second.inserted).toEqual([]);
      expect(second.duplicates).toBe(3);
      expect(await episodes.count(scope.id)).toBe(3);
    });

    it('keeps the same external id apart in different scopes', async () => {
      const a = await scopes.ensure({ key: 'ext-a', channel: 'test' });
      const b = await scopes.ensure({ key: 'ext-b', channel: 'test' });
      await episodes.insertMany(a.id, [episode('in a', { externalId: 'm1' })]);
      const inB = await episodes.insertMany(b.id, [episode('in b', { externalId: 'm1' })]);
      expect(inB.inserted).toHaveLength(1);
      expect((await episodes.findByExternalId(a.id, 'm1'))?.content).toBe('in a');
      expect((await episodes.findByExternalId(b.id, 'm1'))?.content).toBe('in b');
    });

    it('round-trips text exactly: emoji, right-to-left, long content, metadata and tags', async () => {
      const scope = await scopes.ensure({ key: 'text', channel: 'test' });
      const long = 'ab\u00e9'.repeat(300_000);
      const input = episode('👩‍👩‍👧 שלום مرحبا', { metadata: { topics: ['family'], nested: { a: [1, 2] } }, topics: ['family'], entities: ['anna'] });
      const stored = await episodes.insertMany(scope.id, [input, episode(long)]);
      const [first, second] = stored.inserted;
      const readBack = await episodes.get(scope.id, first!.id);
      expect(readBack?.content).toBe('👩‍👩‍👧 שלום مرحبا');
      expect(readBack?.metadata).toEqual({ topics: ['family'], nested: { a: [1, 2] } });
      expect((await episodes.get(scope.id, second!.id))?.content).toBe(long);
      expect(await episodes.tags(scope.id, first!.id)).toEqual({ topics: ['family'], entities: ['anna'] });
    });

    it('lists the latest N oldest first, or everything since a time', async () => {
      const scope = await scopes.ensure({ key: 'list', channel: 'test' });
      const times = [1, 2, 3, 4, 5].map((d) => new Date(`2024-05-0${d}T12:00:00Z`));
      await episodes.insertMany(
        scope.id,
        times.map((t, i) => episode(`day ${i + 1}`, { timestamp: t })),
      );
      expect((await episodes.list(scope.id, { limit: 2 })).map((e) => e.content)).toEqual(['day 4', 'day 5']);
      expect((await episodes.list(scope.id, { since: times[2], limit: 10 })).map((e) => e.content)).toEqual(['day 3', 'day 4', 'day 5']);
    });

    it('finds episodes by keyword at once, stemmed, within the scope only', async () => {
      const mine = await scopes.ensure({ key: 'fts-mine', channel: 'test' });
      const other = await scopes.ensure({ key: 'fts-other', channel: 'test' });
      await episodes.insertMany(mine.id, [episode('I went hiking in the Alps last summer'), episode('Pizza for dinner')]);
      await episodes.insertMany(other.id, [episode('They hike every weekend')]);
      const hits = await fullText.search({ scopeId: mine.id, kind: 'episode', query: 'hikes?', limit: 10 });
      expect(hits).toHaveLength(1);
      const found = await episodes.get(mine.id, hits[0]!.id);
      expect(found?.content).toContain('hiking');
      expect(hits[0]!.score).toBeGreaterThan(0);
      const otherHits = await fullText.search({ scopeId: other.id, kind: 'episode', query: 'hiking', limit: 10 });
      expect(otherHits).toHaveLength(1);
      expect(otherHits[0]!.id).not.toBe(hits[0]!.id);
      expect(await fullText.search({ scopeId: mine.id, kind: 'episode', query: '"; DROP TABLE --', limit: 10 })).toEqual([]);
    });

    it('keeps the full-text index in step with updates and deletes', async () => {
      const scope = await scopes.ensure({ key: 'fts-sync', channel: 'test' });
      const { inserted } = await episodes.insertMany(scope.id, [episode('the violin lesson is on Friday')]);
      const id = inserted[0]!.id;
      await db.prisma.episode.update({ where: { id }, data: { content: 'the cello lesson is on Friday' } });
      expect(await fullText.search({ scopeId: scope.id, kind: 'episode', query: 'violin', limit: 5 })).toEqual([]);
      expect((await fullText.search({ scopeId: scope.id, kind: 'episode', query: 'cello', limit: 5 })).map((h) => h.id)).toEqual([id]);
      await db.prisma.episode.delete({ where: { id } });
      expect(await fullText.search({ scopeId: scope.id, kind: 'episode', query: 'cello', limit: 5 })).toEqual([]);
      expect(await fullText.countDocuments(scope.id, 'episode')).toBe(0);
    });

    it('rolls the index back with the row when a transaction fails', async () => {
      const scope = await scopes.ensure({ key: 'fts-tx', channel: 'test' });
      await expect(
        db.prisma.$transaction(async (tx) => {
          await tx.episode.create({
            data: { scopeId: scope.id, channel: 't', role: 'user', content: 'trombone practice', timestamp: new Date(), contentHash: 'h' },
          });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await fullText.search({ scopeId: scope.id, kind: 'episode', query: 'trombone', limit: 5 })).toEqual([]);
      expect(await episodes.count(scope.id)).toBe(0);
    });

    it("refuses, in the database itself, a link from one scope to another scope's episode", async () => {
      const a = await scopes.ensure({ key: 'iso-a', channel: 'test' });
      const b = await scopes.ensure({ key: 'iso-b', channel: 'test' });
      const { inserted } = await episodes.insertMany(b.id, [episode('secret of b')]);
      const memory = await db.prisma.memory.create({ data: { scopeId: a.id, category: 'fact', content: 'x', confidence: 0.5 } });
      await expect(db.prisma.memorySource.create({ data: { scopeId: a.id, memoryId: memory.id, episodeId: inserted[0]!.id } })).rejects.toThrow();
      await expect(db.prisma.memorySource.create({ data: { scopeId: b.id, memoryId: memory.id, episodeId: inserted[0]!.id } })).rejects.toThrow();
    });

    it('deleting a scope removes every row and index entry of it, and nothing of others', async () => {
      const doomed = await scopes.ensure({ key: 'doomed', channel: 'test' });
      const kept = await scopes.ensure({ key: 'kept', channel: 'test' });
      const { inserted } = await episodes.insertMany(doomed.id, [episode('zebra facts', { topics: ['zebra'] })]);
      await episodes.insertMany(kept.id, [episode('zebra stripes')]);
      const memory = await db.prisma.memory.create({ data: { scopeId: doomed.id, category: 'fact', content: 'likes zebras', confidence: 0.9 } });
      await db.prisma.memorySource.create({ data: { scopeId: doomed.id, memoryId: memory.id, episodeId: inserted[0]!.id } });
      await db.prisma.scope.delete({ where: { id: doomed.id } });
      expect(await db.prisma.episode.count({ where: { scopeId: doomed.id } })).toBe(0);
      expect(await db.prisma.episodeTag.count({ where: { scopeId: doomed.id } })).toBe(0);
      expect(await db.prisma.memory.count({ where: { scopeId: doomed.id } })).toBe(0);
      expect(await db.prisma.memorySource.count({ where: { scopeId: doomed.id } })).toBe(0);
      expect(await fullText.countDocuments(doomed.id, 'episode')).toBe(0);
      expect(await fullText.countDocuments(doomed.id, 'memory')).toBe(0);
      expect(await fullText.search({ scopeId: kept.id, kind: 'episode', query: 'zebra', limit: 5 })).toHaveLength(1);
    });

    it('ingests through the service: normalized, idempotent, the scope touched', async () => {
      const first = await service.ingest(
        { key: 'svc', channel: 'terminal' },
        { content: '  hello\u0000 world ', externalId: 'x1', timestamp: '2024-06-01T08:00:00Z' },
      );
      const again = await service.ingest({ key: 'svc', channel: 'terminal' }, { content: 'hello world', externalId: 'x1' });
      expect(first.duplicate).toBe(false);
      expect(first.episode?.content).toBe('hello world');
      expect(first.episode?.channel).toBe('terminal');
      expect(again.duplicate).toBe(true);
      expect(again.episode?.id).toBe(first.episode?.id);
      const scope = await scopes.findByKey('svc');
      expect(scope?.lastMessageAt?.toISOString()).toBe('2024-06-01T08:00:00.000Z');
      await expect(service.ingest({ key: 'svc', channel: 'terminal' }, { content: '\u0000' })).rejects.toMatchObject({ code: 'episode.empty' });
      await expect(service.ingest({ key: ' bad\u0001', channel: 'terminal' }, { content: 'x' })).rejects.toMatchObject({ code: 'scope.invalid_key' });
    });
  });
}
