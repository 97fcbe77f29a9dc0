/**
 * Hybrid search on a real SQLite store with the deterministic hash embedder and the in-memory
 * vector index: scoring parts, neighbouring turns, passages, dates and speakers named in the query,
 * filters, scope isolation, and the refusal of vector search after an embedder change.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createCore, type Core } from '../../src/core';
import { loadConfig } from '../../src/config/load-config';
import type { Embedder } from '../../src/memory/embeddings/embedder';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import type { FullTextIndex } from '../../src/storage/full-text';
import { createIndexGuard } from '../../src/memory/vectors/index-guard';
import { createInMemoryVectorIndex } from '../../src/vectors/indexes/in-memory-vector-index';
import { createHybridSearch } from '../../src/memory/retrieval/hybrid-search';
import { datesInQuery } from '../../src/memory/retrieval/query-dates';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

function suite(name: string, databaseEnv: () => Promise<Record<string, string>>) {
  describe(`hybrid search (${name})`, () => {
    let core: Core;
    let alice: string;
    let bob: string;
    const index = createInMemoryVectorIndex();

    beforeAll(async () => {
      const config = loadConfig({ env: { DATA_DIR: tempDir(), ...(await databaseEnv()) }, envFile: false });
      core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 256 }), vectorIndex: index });
      const turns = [
        { content: 'How was your weekend?', author: 'Bob' },
        { content: 'Great, I finally adopted a puppy named Biscuit', author: 'Alice' },
        { content: 'That is wonderful news', author: 'Bob' },
        { content: 'Work has been busy with the quarterly report', author: 'Alice' },
        { content: 'Deadlines again?', author: 'Bob' },
        { content: 'Yes, the report is due on Friday', author: 'Alice' },
      ];
      await core.episodeService.ingestMany(
        { key: 'alice', channel: 'test' },
        turns.map((t, i) =>
          core.episodeService.normalize(
            { ...t, conversationId: 'c1', externalId: `a${i}`, timestamp: `2024-05-0${i + 1}T10:00:00Z`, metadata: { topics: i === 1 ? ['pets'] : ['work'] } },
            'test',
          ),
        ),
      );
      await core.episodeService.ingestMany({ key: 'bob', channel: 'test' }, [
        core.episodeService.normalize({ content: 'Bob adopted a puppy named Biscuit too', externalId: 'b0' }, 'test'),
      ]);
      await core.embeddingWorker.drain();
      alice = (await core.scopes.findByKey('alice'))!.id;
      bob = (await core.scopes.findByKey('bob'))!.id;
    });
    afterAll(async () => core?.close());

    it('ranks the matching turn first and explains its score', async () => {
      const { results, notes } = await core.search.search({ scopeId: alice, semanticQuery: 'puppy adopted', limit: 3 });
      expect(notes).toEqual([]);
      expect(results[0]!.externalId).toBe('a1');
      expect(results[0]!.parts.keyword).toBe(1);
      expect(results[0]!.parts.semantic).toBeGreaterThan(0.5);
      expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
    });

    it('lets neighbouring turns lend context to a turn that shares no words with the query', async () => {
      const { results } = await core.search.search({ scopeId: alice, semanticQuery: 'puppy adopted', limit: 6 });
      const reply = results.find((r) => r.externalId === 'a2');
      expect(reply?.parts.context).toBeGreaterThan(0.5);
      const far = results.find((r) => r.externalId === 'a5');
      expect(far?.parts.context ?? 0).toBeLessThan(reply!.parts.context!);
      expect(reply!.score).toBeGreaterThan(far?.score ?? 0);
    });

    it('reads the absolute dates a query names as calendar intervals', () => {
      const iso = (text: string) => datesInQuery(text).map((d) => [d.start.toISOString().slice(0, 10), d.end.toISOString().slice(0, 10)]);
      expect(iso('What did Tim say on 16 November, 2023?')).toEqual([['2023-11-16', '2023-11-17']]);
      expect(iso('How many tournaments had Nate won by July 10, 2022?')).toEqual([['2022-07-10', '2022-07-11']]);
      expect(iso('What did John start in August 2023, and what in 2024?')).toEqual([
        ['2023-08-01', '2023-09-01'],
        ['2024-01-01', '2025-01-01'],
      ]);
      expect(iso('What may Alice do on 31 February, 2023? And at 2023 degrees?')).toEqual([]);
    });

    it('scores turns by their closeness to a date the query names', async () => {
      const { results } = await core.search.search({ scopeId: alice, semanticQuery: 'What happened on 4 May, 2024?', limit: 6 });
      const byId = new Map(results.map((r) => [r.externalId, r]));
      expect(byId.get('a3')!.parts.time).toBe(1);
      // 1 May, 10:00 is 2.58 days before the interval: a little less than one half-life.
      expect(byId.get('a0')!.parts.time).toBeCloseTo(0.5 ** (62 / 24 / 3), 3);
      expect(byId.get('a2')!.parts.time).toBeCloseTo(0.5 ** (14 / 24 / 3), 3);
      expect(results[0]!.externalId).toBe('a3');
      const undated = await core.search.search({ scopeId: alice, semanticQuery: 'What happened?', limit: 6 });
      expect(undated.results.every((r) => r.parts.time === undefined)).toBe(true);
    });

    it('credits the turns of a person the query names, and the passage that holds all its words', async () => {
      const named = await core.search.search({ scopeId: alice, semanticQuery: 'What did Alice adopt?', limit: 6 });
      const speakers = new Map(named.results.map((r) => [r.externalId, r.parts.speaker]));
      expect(speakers.get('a1')).toBe(1);
      expect(speakers.get('a2')).toBe(0);
      const { results } = await core.search.search({ scopeId: alice, semanticQuery: 'puppy report', limit: 6 });
      const byId = new Map(results.map((r) => [r.externalId, r]));
      // a3's window (a1-a5) holds both words; so does a2's (a0-a4), though a2 itself holds neither;
      // a5's window (a3-a5) holds only "report".
      expect(byId.get('a3')!.parts.passage).toBe(1);
      expect(byId.get('a2')!.parts.keyword).toBe(0);
      expect(byId.get('a2')!.parts.passage).toBeGreaterThan(0.9);
      expect(byId.get('a5')!.parts.passage).toBeLessThan(0.7);
      expect(byId.get('a2')!.parts.session).toBe(1);
    });

    it('fetches the turns at given positions of a scope only (the neighbours the pool lacks)', async () => {
      const rows = await core.episodes.atTurns(alice, [
        { conversationId: 'c1', turn: 2 },
        { conversationId: 'c1', turn: 4 },
        { conversationId: 'c1', turn: 9 },
        { conversationId: 'c2', turn: 0 },
      ]);
      expect(rows.map((r) => r.externalId).sort()).toEqual(['a2', 'a4']);
      expect(await core.episodes.atTurns(bob, [{ conversationId: 'c1', turn: 2 }])).toEqual([]);
    });

    it("never returns another scope's episodes, whatever the strategy", async () => {
      for (const strategy of ['hybrid', 'semantic', 'keyword', 'temporal'] as const) {
        const { results } = await core.search.search({ scopeId: alice, semanticQuery: 'Bob adopted a puppy named Biscuit too', limit: 50, strategy });
        expect(results.map((r) => r.externalId)).not.toContain('b0');
      }
      const { results } = await core.search.search({ scopeId: bob, semanticQuery: 'puppy', limit: 50 });
      expect(results.map((r) => r.externalId)).toEqual(['b0']);
    });

    it('filters by time range, topic and importance; temporal returns newest first', async () => {
      const ranged = await core.search.search({
        scopeId: alice,
        semanticQuery: 'puppy report weekend news',
        timeRange: { start: new Date('2024-05-03T00:00:00Z') },
        limit: 10,
      });
      expect(ranged.results.map((r) => r.externalId).sort()).toEqual(['a2', 'a3', 'a4', 'a5']);
      const topical = await core.search.search({ scopeId: alice, semanticQuery: 'puppy report weekend news', topics: ['Pets'], limit: 10 });
      expect(topical.results.map((r) => r.externalId)).toEqual(['a1']);
      const temporal = await core.search.search({ scopeId: alice, strategy: 'temporal', limit: 2 });
      expect(temporal.results.map((r) => r.externalId)).toEqual(['a5', 'a4']);
      await expect(core.search.search({ scopeId: alice, strategy: 'hybrid', limit: 2 })).rejects.toMatchObject({ code: 'search.no_query' });
    });

    it('asks the full-text index while the query is still being embedded', async () => {
      const events: string[] = [];
      const hash = createHashEmbedder({ dimension: 256 });
      const slow: Embedder = {
        name: hash.name,
        dimension: hash.dimension,
        async embed(texts) {
          events.push('embedding');
          await new Promise((resolve) => setTimeout(resolve, 100));
          events.push('embedded');
          return hash.embed(texts);
        },
        close: async () => undefined,
      };
      const fullText: FullTextIndex = {
        ...core.fullText,
        async searchTerms(params) {
          events.push('full-text');
          return core.fullText.searchTerms(params);
        },
      };
      const guard = createIndexGuard({ index, embedder: slow, prisma: core.db.prisma });
      expect((await guard.init()).status).toBe('ready');
      const search = createHybridSearch({
        prisma: core.db.prisma,
        episodes: core.episodes,
        memories: core.memories,
        fullText,
        embedder: slow,
        index,
        guard,
        logger: memoryLogger().logger,
      });
      const { results, notes } = await search.search({ scopeId: alice, semanticQuery: 'puppy adopted', limit: 3, kinds: ['episode'] });
      expect(events).toEqual(['embedding', 'full-text', 'embedded']);
      expect(notes).toEqual([]);
      expect(results[0]!.externalId).toBe('a1');
      expect(results[0]!.parts.semantic).toBeGreaterThan(0.5);
    });

    it("embeds a question's content words, not its form", async () => {
      const embedded: string[] = [];
      const hash = createHashEmbedder({ dimension: 256 });
      const recording: Embedder = { ...hash, embed: async (texts) => (embedded.push(...texts), hash.embed(texts)) };
      const guard = createIndexGuard({ index, embedder: recording, prisma: core.db.prisma });
      expect((await guard.init()).status).toBe('ready');
      const search = createHybridSearch({
        prisma: core.db.prisma,
        episodes: core.episodes,
        memories: core.memories,
        fullText: core.fullText,
        embedder: recording,
        index,
        guard,
        logger: memoryLogger().logger,
      });
      const { results } = await search.search({ scopeId: alice, semanticQuery: 'What puppy did Alice adopt?', limit: 3, kinds: ['episode'] });
      expect(embedded).toEqual(['puppy alice adopt']);
      expect(results[0]!.externalId).toBe('a1');
      expect(results[0]!.parts.semantic).toBeGreaterThan(0);
    });

    it('refuses vector search after an embedder change until reindex, and keeps keyword search working', async () => {
      const other = createHashEmbedder({ dimension: 128 });
      const guard = createIndexGuard({ index, embedder: other, prisma: core.db.prisma });
      expect((await guard.init()).status).toBe('mismatch');
      expect(() => guard.assertReady()).toThrow(/reindex/);
      const search = createHybridSearch({
        prisma: core.db.prisma,
        episodes: core.episodes,
        memories: core.memories,
        fullText: core.fullText,
        embedder: other,
        index,
        guard,
        logger: memoryLogger().logger,
      });
      const { results, notes } = await search.search({ scopeId: alice, semanticQuery: 'puppy', limit: 3 });
      expect(notes.join(' ')).toMatch(/npm run cli -- reindex/);
      expect(results[0]!.externalId).toBe('a1');
      expect(results[0]!.parts.semantic).toBe(0);
    });
  });
}

suite('SQLite', async () => ({}));

if (postgresAvailable()) {
  suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
} else {
  it.skip(`hybrid search on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}
