/**
 * Issue 17, admin API: a scope is addressed by its key as well as its id on every route, as the
 * CLI and chat name it (`telegram:private:555001`), with the colons raw or URL-encoded (%3A),
 * through real HTTP. An unknown key answers 404.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const TOKEN = 'admin-token-scope-keys-0123456789';
const KEY = 'telegram:private:555001';

describe('admin API: scope keys everywhere (issue 17)', () => {
  let core: Core;
  let app: FastifyInstance;
  let base: string;
  let scopeId: string;
  let memoryId: string;
  const logs = memoryLogger();

  beforeAll(async () => {
    core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), logs.logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    await core.episodeService.ingestMany({ key: KEY, channel: 'telegram' }, [
      core.episodeService.normalize({ content: 'I adopted a greyhound named Rocket', externalId: 'k-1' }, 'telegram'),
    ]);
    scopeId = (await core.scopes.findByKey(KEY))!.id;
    await core.db.prisma.$transaction(async (tx) => {
      memoryId = (
        await createMemory(
          tx,
          { scopeId, category: 'relationship', content: 'Has a greyhound named Rocket', confidence: 0.9 },
          { by: 'owner', now: new Date() },
        )
      ).id;
      await createMemory(tx, { scopeId, category: 'fact', content: 'Lives near the harbour', confidence: 0.9 }, { by: 'owner', now: new Date() });
    });
    await core.embeddingWorker.drain();
    app = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: logs.logger });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await core?.close();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, text, json: (text.startsWith('{') ? JSON.parse(text) : undefined) as Record<string, any> };
  };

  it.each([
    ['raw colons', KEY],
    ['URL-encoded colons', encodeURIComponent(KEY)],
  ])('every scope route answers for the key with %s, the same as for the id', async (_form, key) => {
    for (const path of ['memories', `memories/${memoryId}`, 'episodes', 'audit', 'settings', 'export', 'export?format=markdown']) {
      const byKey = await call('GET', `/scopes/${key}/${path}`);
      const byId = await call('GET', `/scopes/${scopeId}/${path}`);
      expect([path, byKey.status]).toEqual([path, 200]);
      expect([path, byKey.text]).toEqual([path, byId.text]);
    }
    const search = await call('POST', `/scopes/${key}/search`, { query: 'greyhound', strategy: 'keyword' });
    expect(search.status).toBe(200);
    expect(search.text).toContain('Rocket');
    const sleep = await call('POST', `/scopes/${key}/sleep`, { dryRun: true });
    expect(sleep.status).toBe(200);
    const settings = await call('PATCH', `/scopes/${key}/settings`, { timezone: 'Europe/Madrid' });
    expect(settings.status).toBe(200);
    expect(settings.text).toContain('Europe/Madrid');
  });

  it('forgets by key, and an unknown key answers 404', async () => {
    expect((await call('DELETE', `/scopes/${encodeURIComponent(KEY)}/memories/${memoryId}`)).status).toBe(200);
    expect((await call('GET', `/scopes/${KEY}/memories/${memoryId}`)).json.memory?.state ?? 'gone').not.toBe('active');
    expect((await call('GET', '/scopes/telegram:private:999999/memories')).status).toBe(404);
    const purge = await call('DELETE', `/scopes/${KEY}/memories`);
    expect(purge.status).toBe(200);
    expect(purge.json.deletedCount).toBeGreaterThan(0);
  });

  it('imports into an existing scope named by its key', async () => {
    const exported = await call('GET', `/scopes/${scopeId}/export`);
    const response = await fetch(`${base}/scopes/${encodeURIComponent(KEY)}/import?mode=copy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: exported.text,
    });
    expect([200, 409]).toContain(response.status); // found by key (never 201: no new scope under a key)
  });
});
