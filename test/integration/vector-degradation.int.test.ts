/**
 * The service keeps working when the vector index cannot be opened: it starts, stores episodes,
 * answers searches by keywords (saying why), refuses nothing a person does; forgetting records
 * tombstones for the vectors it could not delete; once the index answers, vectors are backfilled
 * and the tombstoned vectors deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { createIndexGuard } from '../../src/memory/vectors/index-guard';
import { createInMemoryVectorIndex } from '../../src/vectors/indexes/in-memory-vector-index';
import { pendingTombstones } from '../../src/memory/vectors/tombstones';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

describe('vector index unavailable', () => {
  let core: Core;
  let dir: string;
  const logs = memoryLogger();

  beforeAll(async () => {
    dir = tempDir();
    // A directory where the sqlite-vec file should be: the index cannot be opened.
    fs.mkdirSync(path.join(dir, 'vectors.db'));
    core = await createCore(loadConfig({ env: { DATA_DIR: dir }, envFile: false }), logs.logger, { embedder: createHashEmbedder({ dimension: 128 }) });
  });
  afterAll(async () => core?.close());

  it('starts, stores episodes and answers by keywords, saying why', async () => {
    expect(core.indexGuard.state().status).toBe('unavailable');
    expect(logs.lines().some((l) => /vector index is unavailable/.test(l))).toBe(true);
    const { inserted } = await core.episodeService.ingestMany({ key: 'ana', channel: 'test' }, [
      core.episodeService.normalize({ content: 'I planted tomatoes in the garden', externalId: 'g1' }, 'test'),
      core.episodeService.normalize({ content: 'The meeting moved to Thursday', externalId: 'g2' }, 'test'),
    ]);
    expect(inserted).toBe(2);
    const scopeId = (await core.scopes.findByKey('ana'))!.id;
    const { results, notes } = await core.search.search({ scopeId, semanticQuery: 'tomatoes garden' });
    expect(results[0]!.externalId).toBe('g1');
    expect(notes.join(' ')).toMatch(/vector index is unavailable/);
    await expect(core.embeddingWorker.runOnce()).rejects.toMatchObject({ code: 'vectors.unavailable' });
  });

  it('forgets while the index is down (a tombstone waits), then backfills and cleans up when it answers', async () => {
    const scopeId = (await core.scopes.findByKey('ana'))!.id;
    const memory = await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'fact', content: 'Ana grows tomatoes', confidence: 0.9 }, { by: 'owner', now: new Date() }),
    );
    const forgotten = await core.forget.forgetMemory(scopeId, memory.id);
    expect(forgotten.vectorsDeleted).toBe(false);
    expect(await pendingTombstones(core.db.prisma, scopeId)).toBe(1);

    fs.rmdirSync(path.join(dir, 'vectors.db'));
    expect((await core.indexGuard.init()).status).toBe('ready');
    expect(await core.embeddingWorker.drain()).toBe(2);
    expect(await core.vectorIndex.count(scopeId, 'episode')).toBe(2);
    expect(await pendingTombstones(core.db.prisma, scopeId)).toBe(0);
    const { notes } = await core.search.search({ scopeId, semanticQuery: 'tomatoes garden' });
    expect(notes).toEqual([]);
  });
});

describe('index guard retries', () => {
  it('retries an unavailable index no more often than retryMs', async () => {
    let now = 0;
    let failing = true;
    let opens = 0;
    const index = createInMemoryVectorIndex();
    const flaky = {
      ...index,
      init: async () => {
        opens++;
        if (failing) throw new Error('connection refused');
        return index.init();
      },
    };
    const core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), memoryLogger().logger, {
      embedder: createHashEmbedder({ dimension: 64 }),
    });
    try {
      const guard = createIndexGuard({
        index: flaky,
        embedder: createHashEmbedder({ dimension: 64 }),
        prisma: core.db.prisma,
        retryMs: 1_000,
        clock: () => now,
      });
      expect((await guard.init()).status).toBe('unavailable');
      expect(() => guard.assertReady()).toThrow(/unavailable/);
      failing = false;
      now = 500;
      expect((await guard.ensure()).status).toBe('unavailable');
      expect(opens).toBe(1);
      now = 1_000;
      expect((await guard.ensure()).status).toBe('ready');
      expect(opens).toBe(2);
    } finally {
      await core.close();
    }
  });
});
