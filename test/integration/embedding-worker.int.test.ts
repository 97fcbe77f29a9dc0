/**
 * The embedding queue lives in the database: rows stored before a crash are embedded after the
 * restart, a lost vector index is refilled, and a failing embedder leaves rows pending.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import type { Embedder } from '../../src/memory/embeddings/embedder';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

function configIn(dir: string) {
  return loadConfig({ env: { DATA_DIR: dir }, envFile: false });
}

describe('embedding worker', () => {
  it('embeds after a restart what was stored before it, on the real sqlite-vec file', async () => {
    const dir = tempDir();
    const first = await createCore(configIn(dir), memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    await first.episodeService.ingest({ key: 's', channel: 'test' }, { content: 'the garden needs water' });
    await first.episodeService.ingest({ key: 's', channel: 'test' }, { content: 'tomatoes are ripening' });
    expect(await first.embeddingWorker.pending()).toBe(2);
    await first.close(); // the process ends before the worker ran

    const second = await createCore(configIn(dir), memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    expect(await second.embeddingWorker.drain()).toBe(2);
    const scope = (await second.scopes.findByKey('s'))!;
    expect(await second.vectorIndex.count(scope.id)).toBe(2);
    const { results } = await second.search.search({ scopeId: scope.id, semanticQuery: 'tomato', strategy: 'semantic', limit: 1 });
    expect(results[0]!.content).toBe('tomatoes are ripening');
    await second.close();

    // The vector file is lost: the rows are queued again and the index refilled.
    fs.rmSync(path.join(dir, 'vectors.db'), { force: true });
    fs.rmSync(path.join(dir, 'vectors.db-wal'), { force: true });
    fs.rmSync(path.join(dir, 'vectors.db-shm'), { force: true });
    const third = await createCore(configIn(dir), memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    expect(await third.embeddingWorker.pending()).toBe(2);
    await third.embeddingWorker.drain();
    expect(await third.vectorIndex.count(scope.id)).toBe(2);
    await third.close();
  });

  it('leaves rows pending when the embedder fails, and a background worker retries', async () => {
    const dir = tempDir();
    let failures = 2;
    const hash = createHashEmbedder({ dimension: 32 });
    const flaky: Embedder = {
      name: hash.name,
      dimension: hash.dimension,
      embed: async (texts) => {
        if (failures > 0) {
          failures -= 1;
          throw new Error('embedder down');
        }
        return hash.embed(texts);
      },
      close: async () => undefined,
    };
    const core = await createCore(configIn(dir), memoryLogger().logger, { embedder: flaky });
    await core.episodeService.ingest({ key: 's', channel: 'test' }, { content: 'hello there' });
    await expect(core.embeddingWorker.runOnce()).rejects.toThrow('embedder down');
    expect(await core.embeddingWorker.pending()).toBe(1);
    core.embeddingWorker.start();
    const deadline = Date.now() + 10_000;
    while ((await core.embeddingWorker.pending()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await core.embeddingWorker.pending()).toBe(0);
    await core.close();
  });

  it('a text with no words has no vector, and does not hold up the rows after it', async () => {
    const dir = tempDir();
    const core = await createCore(configIn(dir), memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 32 }) });
    await core.episodeService.ingest({ key: 's', channel: 'test' }, { content: '!!! ...' });
    await core.episodeService.ingest({ key: 's', channel: 'test' }, { content: 'the kettle is broken' });
    // The first row's embedding is all zeros (no direction): the index refuses such vectors.
    expect(await core.embeddingWorker.drain()).toBe(2);
    expect(await core.embeddingWorker.pending()).toBe(0);
    const scope = (await core.scopes.findByKey('s'))!;
    expect(await core.vectorIndex.count(scope.id)).toBe(1);
    const { results } = await core.search.search({ scopeId: scope.id, semanticQuery: 'kettle', strategy: 'semantic', limit: 1 });
    expect(results[0]!.content).toBe('the kettle is broken');
    await core.close();
  });
});
