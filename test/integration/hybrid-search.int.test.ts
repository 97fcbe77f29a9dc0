/**
 * Hybrid search on a real SQLite store with the deterministic hash embedder and the in-memory
 * vector index: scoring parts, neighbouring turns, filters, scope isolation, and the refusal of
 * vector search after an embedder change.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createCore, type Core } from '../../src/core';
import { loadConfig } from '../../src/config/load-config';
import { createHashEmbedder } from '../../src/memory/embeddings/hash-embedder';
import { createIndexGuard } from '../../src/memory/vectors/index-guard';
import { createInMemoryVectorIndex } from '../../src/memory/vectors/in-memory-vector-index';
import { createHybridSearch } from '../../src/memory/retrieval/hybrid-search';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

describe('hybrid search', () => {
  let core: Core;
  let alice: string;
  let bob: string;
  const index = createInMemoryVectorIndex();

  beforeAll(async () => {
    const config = loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false });
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
      turns.map((t, i) => core.episodeService.normalize({ ...t, conversationId: 'c1', externalId: `a${i}`, timestamp: `2024-05-0${i + 1}T10:00:00Z`, metadata: { topics: i === 1 ? ['pets'] : ['work'] } }, 'test')),
    );
    await core.episodeService.ingestMany({ key: 'bob', channel: 'test' }, [core.episodeService.normalize({ content: 'Bob adopted a puppy named Biscuit too', externalId: 'b0' }, 'test')]);
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

  it('never returns another scope\'s episodes, whatever the strategy', async () => {
    for (const strategy of ['hybrid', 'semantic', 'keyword', 'temporal'] as const) {
      const { results } = await core.search.search({ scopeId: alice, semanticQuery: 'Bob adopted a puppy named Biscuit too', limit: 50, strategy });
      expect(results.map((r) => r.externalId)).not.toContain('b0');
    }
    const { results } = await core.search.search({ scopeId: bob, semanticQuery: 'puppy', limit: 50 });
    expect(results.map((r) => r.externalId)).toEqual(['b0']);
  });

  it('filters by time range, topic and importance; temporal returns newest first', async () => {
    const ranged = await core.search.search({ scopeId: alice, semanticQuery: 'puppy report weekend news', timeRange: { start: new Date('2024-05-03T00:00:00Z') }, limit: 10 });
    expect(ranged.results.map((r) => r.externalId).sort()).toEqual(['a2', 'a3', 'a4', 'a5']);
    const topical = await core.search.search({ scopeId: alice, semanticQuery: 'puppy report weekend news', topics: ['Pets'], limit: 10 });
    expect(topical.results.map((r) => r.externalId)).toEqual(['a1']);
    const temporal = await core.search.search({ scopeId: alice, strategy: 'temporal', limit: 2 });
    expect(temporal.results.map((r) => r.externalId)).toEqual(['a5', 'a4']);
    await expect(core.search.search({ scopeId: alice, strategy: 'hybrid', limit: 2 })).rejects.toMatchObject({ code: 'search.no_query' });
  });

  it('refuses vector search after an embedder change until reindex, and keeps keyword search working', async () => {
    const other = createHashEmbedder({ dimension: 128 });
    const guard = createIndexGuard({ index, embedder: other, prisma: core.db.prisma });
    expect((await guard.init()).status).toBe('mismatch');
    expect(() => guard.assertReady()).toThrow(/reindex/);
    const search = createHybridSearch({ prisma: core.db.prisma, episodes: core.episodes, memories: core.memories, fullText: core.fullText, embedder: other, index, guard, logger: memoryLogger().logger });
    const { results, notes } = await search.search({ scopeId: alice, semanticQuery: 'puppy', limit: 3 });
    expect(notes.join(' ')).toMatch(/npm run cli -- reindex/);
    expect(results[0]!.externalId).toBe('a1');
    expect(results[0]!.parts.semantic).toBe(0);
  });
});
