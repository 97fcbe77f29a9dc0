/**
 * Search ranks knowledge first, on a real SQLite store with the deterministic hash embedder: a
 * current memory comes before the episodes it (or its earlier versions) was learned from, a
 * superseded version below its current one, and episodes whose text was forgotten never return.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { FORGOTTEN_TEXT } from '../../src/memory/forget/forget-service';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

describe('search ranks knowledge first', () => {
  let core: Core;
  let dana: string;
  const ids: Record<string, string> = {};
  const now = new Date('2026-03-10T12:00:00Z');

  beforeAll(async () => {
    core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), memoryLogger().logger, {
      embedder: createHashEmbedder({ dimension: 256 }),
    });
    const turns = [
      'I work as a pediatric nurse at the city hospital, I really like the kids',
      'Work was long today, twelve hours at the hospital again',
      'My secret locker code at work is 4471',
      'Does anyone else find work tiring on Mondays?',
      'Big news: I got promoted, I am the charge nurse of my ward now',
    ];
    await core.episodeService.ingestMany(
      { key: 'dana', channel: 'test' },
      turns.map((content, i) =>
        core.episodeService.normalize(
          {
            content,
            author: 'Dana',
            conversationId: `c${i < 4 ? 1 : 2}`,
            externalId: `d${i}`,
            timestamp: new Date(now.getTime() - (40 - i * 8) * 86_400_000).toISOString(),
          },
          'test',
        ),
      ),
    );
    dana = (await core.scopes.findByKey('dana'))!.id;
    const episode = async (externalId: string) => (await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: dana, externalId } })).id;
    await core.db.prisma.$transaction(async (tx) => {
      const v1 = await createMemory(
        tx,
        { scopeId: dana, category: 'fact', content: 'Dana works as a pediatric nurse', confidence: 0.9, sourceEpisodeIds: [await episode('d0')] },
        { now: new Date(now.getTime() - 40 * 86_400_000) },
      );
      const { current } = await supersedeMemory(
        tx,
        dana,
        v1.id,
        { content: 'Dana works as the charge nurse of her ward', sourceEpisodeIds: [await episode('d4')] },
        { now: new Date(now.getTime() - 8 * 86_400_000) },
      );
      ids.v1 = v1.id;
      ids.v2 = current.id;
      const code = await createMemory(
        tx,
        { scopeId: dana, category: 'fact', content: 'Dana keeps a locker code at work', confidence: 0.8, sourceEpisodeIds: [await episode('d2')] },
        { now },
      );
      ids.code = code.id;
    });
    await core.embeddingWorker.drain();
  });
  afterAll(async () => core?.close());

  it('puts the current memory before the outdated episode it was corrected from', async () => {
    const { results } = await core.search.search({ scopeId: dana, semanticQuery: 'where does Dana work as a nurse', limit: 10, now });
    expect(results[0]).toMatchObject({ kind: 'memory', id: ids.v2 });
    const pediatric = results.findIndex((r) => r.externalId === 'd0');
    expect(pediatric).toBeGreaterThan(0);
    expect(results[0]!.parts.folded).toBe(1);
  });

  it('ranks a superseded version below its current one', async () => {
    const { results } = await core.search.search({ scopeId: dana, semanticQuery: 'pediatric nurse', kinds: ['memory'], includeInactive: true, limit: 10, now });
    const order = results.map((r) => r.id);
    expect(order).toContain(ids.v1);
    expect(order.indexOf(ids.v2)).toBeLessThan(order.indexOf(ids.v1));
  });

  it('never returns an episode whose text was forgotten', async () => {
    await core.forget.forgetMemory(dana, ids.code);
    const redacted = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: dana, externalId: 'd2' } });
    expect(redacted.content).toBe(FORGOTTEN_TEXT);
    const hybrid = await core.search.search({ scopeId: dana, semanticQuery: 'long day at work at the hospital', kinds: ['episode'], limit: 20, now });
    const temporal = await core.search.search({ scopeId: dana, strategy: 'temporal', kinds: ['episode'], limit: 20, now });
    for (const { results } of [hybrid, temporal]) {
      expect(results.length).toBeGreaterThan(0);
      expect(results.map((r) => r.content)).not.toContain(FORGOTTEN_TEXT);
    }
  });
});
