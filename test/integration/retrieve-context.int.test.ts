/**
 * Context for a reply on a real SQLite store: relevant memories above the confidence floor,
 * the last 24 hours of episodes, packing into the token budget with what was dropped, access
 * counted (never reinforcement), and nothing from another scope.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { packIntoBudget } from '../../src/memory/retrieval/retrieve-context';
import { clearRegisteredSecrets, registerSecrets } from '../../src/shared/redact';
import { estimateTokens } from '../../src/shared/tokens';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

describe('retrieveContext', () => {
  let core: Core;
  let ana: string;
  let ben: string;
  const now = new Date('2026-03-10T12:00:00Z');

  beforeAll(async () => {
    core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), memoryLogger().logger, {
      embedder: createHashEmbedder({ dimension: 256 }),
    });
    const ingest = (key: string, content: string, hoursAgo: number, i: number) =>
      core.episodeService.ingestMany({ key, channel: 'test' }, [
        core.episodeService.normalize({ content, externalId: `${key}-${i}`, timestamp: new Date(now.getTime() - hoursAgo * 3_600_000).toISOString() }, 'test'),
      ]);
    await ingest('ana', 'We talked about the hiking trip to the Pyrenees', 2, 1);
    await ingest('ana', 'Remind me to buy new boots', 5, 2);
    await ingest('ana', 'An old message from last week about taxes', 24 * 7, 3);
    await ingest('ben', 'Ben secret: the hiking trip is a surprise party', 1, 1);
    ana = (await core.scopes.findByKey('ana'))!.id;
    ben = (await core.scopes.findByKey('ben'))!.id;
    const origin = { by: 'owner' as const, now: new Date(now.getTime() - 86_400_000) };
    await core.db.prisma.$transaction(async (tx) => {
      await createMemory(tx, { scopeId: ana, category: 'preference', content: 'Ana loves hiking in the mountains', confidence: 0.9 }, origin);
      await createMemory(tx, { scopeId: ana, category: 'fact', content: 'Ana might dislike hiking in the rain', confidence: 0.2 }, origin);
      await createMemory(tx, { scopeId: ana, category: 'fact', content: 'Ana works as a nurse', confidence: 0.8 }, origin);
      await createMemory(tx, { scopeId: ben, category: 'fact', content: 'Ben plans hiking surprise for Ana', confidence: 0.9 }, origin);
    });
    await core.embeddingWorker.drain();
  });
  afterAll(async () => core?.close());

  it('brings relevant confident memories and the turns the search finds, nothing from another scope', async () => {
    const ctx = await core.context.retrieveContext({ scopeId: ana, message: 'any tips for my hiking trip?', now });
    const texts = ctx.items.map((i) => i.text).join('\n');
    expect(texts).toContain('Ana loves hiking in the mountains');
    expect(texts).not.toContain('dislike hiking in the rain'); // below the 0.3 confidence floor
    expect(texts).toContain('Pyrenees');
    expect(texts).toContain('buy new boots');
    // Older than 24 hours, so in no recent window; the search covers every turn, and ranks it below the hiking ones.
    const at = (word: string) => ctx.items.findIndex((i) => i.text.includes(word));
    if (at('taxes') >= 0) expect(at('taxes')).toBeGreaterThan(at('Pyrenees'));
    expect(texts).not.toMatch(/Ben|surprise/);
    expect(ctx.items.some((i) => i.kind === 'memory')).toBe(true);
    expect(ctx.usedTokens).toBe(ctx.items.reduce((n, i) => n + i.tokens, 0));
    expect(ctx.usedTokens).toBeLessThanOrEqual(2_000);
    expect(ctx.dropped).toEqual([]);
  });

  it('packs into a small budget and returns what it dropped', async () => {
    const full = await core.context.retrieveContext({ scopeId: ana, message: 'hiking trip', now });
    const budget = full.items[0]!.tokens + 1;
    const small = await core.context.retrieveContext({ scopeId: ana, message: 'hiking trip', now, budgetTokens: budget });
    expect(small.usedTokens).toBeLessThanOrEqual(budget);
    expect(small.items.length).toBeGreaterThan(0);
    expect(small.dropped.length).toBe(full.items.length - small.items.length);
    expect([...small.items, ...small.dropped].map((i) => i.id).sort()).toEqual(full.items.map((i) => i.id).sort());
  });

  it('counts access on the memories it includes but never reinforces them', async () => {
    const before = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId: ana, content: 'Ana works as a nurse' } });
    const ctx = await core.context.retrieveContext({ scopeId: ana, message: 'what is my job as a nurse', now });
    expect(ctx.memoryIds).toContain(before.id);
    const after = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: before.id } });
    expect(after.accessCount).toBe(before.accessCount + 1);
    expect(after.confidence).toBe(before.confidence);
    expect(after.reinforcementCount).toBe(before.reinforcementCount);
    expect(after.lastReinforcedAt).toEqual(before.lastReinforcedAt);
  });

  it('puts stored text into the prompt through the output filter: a pasted key reads [REDACTED]', async () => {
    const key = `sk-ant-api03-${'Zq7'.repeat(16)}`;
    await core.episodeService.ingestMany({ key: 'cara', channel: 'test' }, [
      core.episodeService.normalize(
        { content: `the deploy key is ${key}`, externalId: 'cara-1', timestamp: new Date(now.getTime() - 3_600_000).toISOString() },
        'test',
      ),
    ]);
    const cara = (await core.scopes.findByKey('cara'))!.id;
    await core.db.prisma.$transaction((tx) =>
      createMemory(
        tx,
        { scopeId: cara, category: 'fact', content: `Cara keeps the deploy key ${key} in the team vault`, confidence: 0.9 },
        { now, by: 'owner' },
      ),
    );
    await core.embeddingWorker.drain();
    const ctx = await core.context.retrieveContext({ scopeId: cara, message: 'what is the deploy key?', now });
    const texts = ctx.items.map((i) => i.text).join('\n');
    expect(ctx.items.map((i) => i.kind).sort()).toEqual(['episode', 'memory']);
    expect(texts).toContain('Cara keeps the deploy key [REDACTED] in the team vault');
    expect(texts).toContain('the deploy key is [REDACTED]');
    expect(texts).not.toContain('Zq7Zq7');
  });

  it('shows a turn older than a day that the search found through the output filter once', async () => {
    const key = `sk-ant-api03-${'Qx5'.repeat(16)}`;
    await core.episodeService.ingestMany({ key: 'dora', channel: 'test' }, [
      core.episodeService.normalize(
        { content: `the staging key is ${key}`, externalId: 'dora-1', timestamp: new Date(now.getTime() - 3 * 86_400_000).toISOString() },
        'test',
      ),
    ]);
    const dora = (await core.scopes.findByKey('dora'))!.id;
    await core.embeddingWorker.drain();
    const ctx = await core.context.retrieveContext({ scopeId: dora, message: 'what is the staging key?', now });
    const texts = ctx.items.map((i) => i.text).join('\n');
    expect(texts).toContain('the staging key is [REDACTED]');
    expect(texts).not.toContain('Qx5Qx5');
  });

  it("keeps the service's own ids whole in search results and context when a secret happens to occur inside one", async () => {
    const episode = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: ana, content: { contains: 'Pyrenees' } } });
    // The random tail of the id: the service's secrets are registered the same way at start-up.
    registerSecrets([episode.id.slice(-12)]);
    try {
      const { results } = await core.search.search({ scopeId: ana, semanticQuery: 'hiking trip to the Pyrenees', kinds: ['episode'], now });
      const found = results.find((r) => r.content.includes('Pyrenees'));
      expect(found?.id).toBe(episode.id);
      const ctx = await core.context.retrieveContext({ scopeId: ana, message: 'hiking trip to the Pyrenees', now });
      expect(ctx.items.map((i) => i.id)).toContain(episode.id);
      // Stored text is still filtered: the secret inside a turn's text would read [REDACTED].
      expect(results.every((r) => !r.id.includes('[REDACTED]'))).toBe(true);
    } finally {
      clearRegisteredSecrets();
    }
  });

  it('packs greedily by score and keeps trying smaller items after one does not fit', () => {
    const item = (id: string, score: number, tokens: number) => ({ kind: 'memory' as const, id, text: id, score, tokens });
    const packed = packIntoBudget([item('a', 0.9, 60), item('b', 0.8, 50), item('c', 0.7, 30)], 100);
    expect(packed.items.map((i) => i.id)).toEqual(['a', 'c']);
    expect(packed.dropped.map((i) => i.id)).toEqual(['b']);
    expect(packed.used).toBe(90);
  });

  it('estimates tokens from characters and words, whichever is larger', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('a'.repeat(400))).toBe(100);
    expect(estimateTokens('a b c d e f g h')).toBe(Math.ceil(8 * 0.75 + 1));
    expect(estimateTokens('The quick brown fox jumps over the lazy dog.')).toBeGreaterThanOrEqual(10);
  });
});
