/**
 * The admin API through real HTTP (fastify listening on loopback) on SQLite and PostgreSQL:
 * authentication (missing, wrong, right), a scope's id in another scope's path answers 404 and
 * never data, memories with sources and history, search, deletes that forget everywhere,
 * validation errors, health, metrics and the OpenAPI document.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const TOKEN = 'admin-token-0123456789abcdef';

function suite(name: string, databaseEnv: () => Promise<Record<string, string>>) {
  describe(`admin API (${name})`, () => {
    let core: Core;
    let app: FastifyInstance;
    let base: string;
    let ana: string;
    let ben: string;
    let anaMemory: string;
    let benMemory: string;
    const logs = memoryLogger();

    beforeAll(async () => {
      core = await createCore(loadConfig({ env: { DATA_DIR: tempDir(), ...(await databaseEnv()) }, envFile: false }), logs.logger, {
        embedder: createHashEmbedder({ dimension: 64 }),
      });
      for (const [key, text] of [
        ['ana', 'I adopted a greyhound named Rocket'],
        ['ben', 'My bank PIN hint is the blue door'],
      ]) {
        await core.episodeService.ingestMany({ key: key!, channel: 'test' }, [
          core.episodeService.normalize({ content: text, externalId: `${key}-1` }, 'test'),
        ]);
      }
      ana = (await core.scopes.findByKey('ana'))!.id;
      ben = (await core.scopes.findByKey('ben'))!.id;
      const episode = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: ana } });
      await core.db.prisma.$transaction(async (tx) => {
        anaMemory = (
          await createMemory(
            tx,
            { scopeId: ana, category: 'relationship', content: 'Ana has a greyhound named Rocket', confidence: 0.9, sourceEpisodeIds: [episode.id] },
            { now: new Date() },
          )
        ).id;
        benMemory = (
          await createMemory(
            tx,
            { scopeId: ben, category: 'fact', content: 'Ben hides his PIN hint behind the blue door', confidence: 0.9 },
            { by: 'owner', now: new Date() },
          )
        ).id;
      });
      await core.embeddingWorker.drain();
      app = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: logs.logger });
      base = await app.listen({ host: '127.0.0.1', port: 0 });
    });
    afterAll(async () => {
      await app?.close();
      await core?.close();
    });

    const call = async (method: string, path: string, options: { token?: string | null; body?: unknown } = {}) => {
      const headers: Record<string, string> = {};
      if (options.token !== null) headers.authorization = `Bearer ${options.token ?? TOKEN}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
      const text = await response.text();
      return { status: response.status, text, json: (text.startsWith('{') ? JSON.parse(text) : undefined) as Record<string, any> };
    };

    it('refuses every data route without the right token; health needs none', async () => {
      for (const [method, path] of [
        ['GET', '/scopes'],
        ['GET', `/scopes/${ana}/memories`],
        ['DELETE', `/scopes/${ana}/memories`],
        ['GET', '/metrics'],
        ['GET', '/openapi.json'],
      ] as const) {
        expect((await call(method, path, { token: null })).status).toBe(401);
        expect((await call(method, path, { token: 'admin-token-0123456789abcdeX' })).status).toBe(401);
      }
      // The reference page opens in a browser, which sends no token; it holds no data.
      expect((await call('GET', '/docs', { token: null })).status).toBe(200);
      expect((await call('GET', '/healthz', { token: null })).json).toEqual({ status: 'ok' });
      expect((await call('GET', '/readyz', { token: null })).json).toMatchObject({ status: 'ready', checks: { database: 'ok', vectors: 'ready' } });
      expect(await core.db.prisma.memory.count()).toBe(2);
    });

    it('lists scopes and memories, and shows a memory with its sources and history', async () => {
      const scopes = (await call('GET', '/scopes')).json.scopes as Array<{ key: string }>;
      expect(scopes.map((s) => s.key).sort()).toEqual(['ana', 'ben']);
      const list = await call('GET', `/scopes/${ana}/memories?limit=10&minConfidence=0.5`);
      expect(list.json.total).toBe(1);
      expect(list.json.memories[0].content).toBe('Ana has a greyhound named Rocket');
      const one = await call('GET', `/scopes/${ana}/memories/${anaMemory}`);
      expect(one.json.memory.sources[0].episode.content).toBe('I adopted a greyhound named Rocket');
      expect(one.json.history.map((h: { action: string }) => h.action)).toEqual(['create']);
    });

    it("answers 404 for another scope's memory in a scope's path, never its data", async () => {
      for (const [method, path] of [
        ['GET', `/scopes/${ana}/memories/${benMemory}`],
        ['DELETE', `/scopes/${ana}/memories/${benMemory}`],
      ] as const) {
        const response = await call(method, path);
        expect(response.status).toBe(404);
        expect(response.text).not.toMatch(/PIN|blue door/);
      }
      const search = await call('POST', `/scopes/${ana}/search`, { body: { query: 'PIN hint blue door' } });
      expect(search.status).toBe(200);
      expect(search.text).not.toMatch(/PIN hint|blue door/);
      expect((await call('GET', '/scopes/no-such-scope/memories')).status).toBe(404);
      expect(await core.db.prisma.memory.count({ where: { scopeId: ben } })).toBe(1);
    });

    it('validates requests with clear 400s', async () => {
      expect((await call('GET', `/scopes/${ana}/memories?limit=100000`)).status).toBe(400);
      const bad = await call('POST', `/scopes/${ana}/search`, { body: { query: 'x', strategy: 'psychic' } });
      expect(bad.status).toBe(400);
      // The field as it is named, before its problem (a field name is never capitalised).
      expect(bad.json.detail).toMatch(/^strategy: /);
    });

    it('exports a scope (JSON and Markdown) and imports it into an empty database exactly; refuses to overwrite', async () => {
      const exported = await call('GET', `/scopes/${ana}/export`);
      expect(exported.status).toBe(200);
      expect(exported.json.scope.key).toBe('ana');
      expect(exported.text).toContain('Ana has a greyhound named Rocket');
      expect(exported.text).not.toContain('blue door');
      const markdown = await call('GET', `/scopes/${ana}/export?format=markdown`);
      expect(markdown.text).toContain('<!-- MEMORY.md -->');
      expect(markdown.text).toContain('Ana has a greyhound named Rocket');

      // Another, empty store: the export creates the scope under its own id, and exports the same bytes.
      const other = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), logs.logger, {
        embedder: createHashEmbedder({ dimension: 64 }),
      });
      const otherApp = await createApiServer({ ...other, timeZone: other.config.timeZone, token: TOKEN, logger: logs.logger });
      const otherBase = await otherApp.listen({ host: '127.0.0.1', port: 0 });
      try {
        const post = (path: string, body: string) =>
          fetch(`${otherBase}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
        expect((await post(`/scopes/not-this-scope/import`, exported.text)).status).toBe(404);
        const imported = await post(`/scopes/${ana}/import`, exported.text);
        expect(imported.status).toBe(201);
        expect(await imported.json()).toMatchObject({ scopeId: ana, scopeKey: 'ana', mode: 'exact', counts: { memories: 1, episodes: 1 } });
        const again = await fetch(`${otherBase}/scopes/${ana}/export`, { headers: { authorization: `Bearer ${TOKEN}` } });
        expect(await again.text()).toBe(exported.text);
        // The scope has data now: a second import is refused and changes nothing.
        const refused = await post(`/scopes/${ana}/import`, exported.text);
        expect(refused.status).toBe(409);
        expect(await other.db.prisma.memory.count()).toBe(1);
        // Not an export: a clear 400, nothing written.
        const bad = await post(`/scopes/${ana}/import`, JSON.stringify({ hello: 'world' }));
        expect(bad.status).toBe(400);
      } finally {
        await otherApp.close();
        await other.close();
      }
      // In the same store, a copy with new ids fills an empty scope.
      // The scope filled belongs to its own person, and stays theirs (not Ana's, not nobody's).
      await core.scopes.ensure({ key: 'ana-copy', channel: 'test', ownerId: 'copy-owner' });
      const copyScope = (await core.scopes.findByKey('ana-copy'))!.id;
      const copy = await call('POST', `/scopes/${copyScope}/import?mode=copy`, { body: JSON.parse(exported.text) });
      expect(copy.status).toBe(200);
      expect(copy.json.counts.memories).toBe(1);
      const copied = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId: copyScope } });
      expect(copied.content).toBe('Ana has a greyhound named Rocket');
      expect(copied.id).not.toBe(anaMemory);
      expect((await core.scopes.findByKey('ana-copy'))!.ownerId).toBe('copy-owner');
    });

    it('spools an import body to a temporary file and always removes it; 413 past 256 MiB', async () => {
      const spoolDir = tempDir();
      const spoolApp = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: logs.logger, spoolDir });
      const spoolBase = await spoolApp.listen({ host: '127.0.0.1', port: 0 });
      const left = () => fs.readdirSync(spoolDir);
      const open = (path: string, headers: Record<string, string>, onStatus: (status: number) => void, onError: (error: Error) => void) => {
        const request = http.request(
          `${spoolBase}${path}`,
          { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers } },
          (response) => {
            response.resume();
            onStatus(response.statusCode!);
          },
        );
        request.on('error', onError);
        return request;
      };
      const raw = (path: string, headers: Record<string, string>, body: string) =>
        new Promise<number>((resolve, reject) => {
          open(path, headers, resolve, reject).end(body);
        });
      try {
        const exported = (await call('GET', `/scopes/${ana}/export`)).text;
        // A declared size over the limit is refused before a byte is read.
        expect(await raw(`/scopes/${ana}/import`, { 'content-length': String(256 * 1024 * 1024 + 1) }, '{')).toBe(413);
        // A bad query string is refused after the body was spooled; an invalid document; a clash.
        expect(await raw(`/scopes/${ana}/import?mode=bogus`, {}, exported)).toBe(400);
        expect(await raw(`/scopes/${ana}/import`, {}, '{"format": 1,')).toBe(400);
        expect(await raw(`/scopes/${ana}/import`, {}, exported)).toBe(409);
        expect(left()).toEqual([]);
        // An upload cut off half-way: its spool exists while it arrives (encrypted: not the text sent), then is gone.
        const cut = open(
          `/scopes/${ana}/import`,
          { 'content-length': String(exported.length * 2) },
          () => undefined,
          () => undefined,
        );
        cut.write(exported);
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(left()).toHaveLength(1);
        const spooled = fs.readFileSync(path.join(spoolDir, left()[0]!, 'body.spool'));
        expect(spooled.length).toBeGreaterThan(0);
        expect(spooled.toString('latin1')).not.toContain('greyhound');
        cut.destroy();
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(left()).toEqual([]);
      } finally {
        await spoolApp.close();
      }
    });

    it('searches, lists episodes and audit, and deletes (one, then all) everywhere', async () => {
      const found = await call('POST', `/scopes/${ana}/search`, { body: { query: 'greyhound', kinds: ['memory'] } });
      expect(found.json.results[0].id).toBe(anaMemory);
      expect((await call('GET', `/scopes/${ana}/episodes`)).json.episodes).toHaveLength(1);
      expect((await call('GET', `/scopes/${ana}/audit`)).json.events[0].action).toBe('create');
      const deleted = await call('DELETE', `/scopes/${ana}/memories/${anaMemory}`);
      expect(deleted.json).toEqual({ success: true, removed: 1 });
      expect(await core.vectorIndex.count(ana, 'memory')).toBe(0);
      expect((await core.fullText.search({ scopeId: ana, kind: 'memory', query: 'greyhound', limit: 5 })).length).toBe(0);
      const purge = await call('DELETE', `/scopes/${ben}/memories`);
      expect(purge.json).toEqual({ success: true, deletedCount: 1 });
    });

    it('serves Prometheus metrics and the OpenAPI document; never logs the token', async () => {
      await call('POST', `/scopes/${ana}/search`, { body: { query: 'greyhound' } });
      // Two compaction cycles of the agent, the second one's summary failed.
      for (const [purpose, status] of [
        ['compaction-flush', 'ok'],
        ['compaction-summary', 'ok'],
        ['compaction-flush', 'ok'],
        ['compaction-summary', 'error'],
        ['reply', 'ok'],
      ]) {
        await core.db.prisma.llmCall.create({ data: { scopeId: ana, purpose: purpose!, status: status!, provider: 'anthropic', model: 'claude' } });
      }
      const metrics = await call('GET', '/metrics');
      expect(metrics.text).toMatch(/^nocturne_compaction_steps_total\{step="flush",status="ok"\} 2$/m);
      expect(metrics.text).toMatch(/^nocturne_compaction_steps_total\{step="summary",status="error"\} 1$/m);
      // Ana, Ben, and the copy of Ana's scope (its audit came with it).
      expect(metrics.text).toMatch(/^nocturne_memories_created_total 3$/m);
      expect(metrics.text).toMatch(/nocturne_search_seconds_count\{strategy="hybrid"\} \d+/);
      expect(metrics.text).toMatch(/nocturne_embedding_queue \d+/);
      const openapi = await call('GET', '/openapi.json');
      expect(openapi.json.openapi).toMatch(/^3\./);
      expect(Object.keys(openapi.json.paths)).toEqual(expect.arrayContaining(['/scopes/{id}/memories', '/scopes/{id}/search', '/scopes/{id}/memories/{mid}']));
      // The same reference as a page a person reads (behind the token, checked above): every route, self-contained.
      const page = await call('GET', '/docs');
      expect(page.status).toBe(200);
      expect(page.text).toMatch(/^<!doctype html>/);
      for (const route of Object.keys(openapi.json.paths)) expect(page.text).toContain(`<code>${route}</code>`);
      expect(page.text).toMatch(/<code>limit<\/code><\/td><td>query<\/td><td>no<\/td><td>integer, 1-500/);
      expect(page.text).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)/);
      expect(logs.lines().join('\n')).not.toContain(TOKEN);
    });

    it('shows a secret pasted into a chat redacted in search results and episodes', async () => {
      const key = `sk-ant-api03-${'Zq7'.repeat(16)}`;
      await core.episodeService.ingestMany({ key: 'cara', channel: 'test' }, [
        core.episodeService.normalize({ content: `my staging key is ${key} keep it safe`, externalId: 'cara-1' }, 'test'),
      ]);
      const cara = (await core.scopes.findByKey('cara'))!.id;
      const search = await call('POST', `/scopes/${cara}/search`, { body: { query: 'staging key', strategy: 'keyword' } });
      const episodes = await call('GET', `/scopes/${cara}/episodes`);
      for (const response of [search, episodes]) {
        expect(response.status).toBe(200);
        expect(response.text).toContain('my staging key is [REDACTED]');
        expect(response.text).not.toContain('Zq7Zq7');
      }
    });

    it('names a scope in the path by its key as well as by its id', async () => {
      for (const path of ['memories?state=all', 'episodes', 'audit']) {
        const byKey = await call('GET', `/scopes/ana/${path}`);
        expect(byKey.status).toBe(200);
        expect(byKey.json).toEqual((await call('GET', `/scopes/${ana}/${path}`)).json);
      }
      const search = await call('POST', '/scopes/cara/search', { body: { query: 'staging key', strategy: 'keyword' } });
      expect(search.json.results[0].externalId).toBe('cara-1');
      const exported = await call('GET', '/scopes/ana/export');
      expect(exported.json.scope.id).toBe(ana);
      expect((await call('GET', '/scopes/nobody/episodes')).status).toBe(404);
    });
  });
}

suite('SQLite', async () => ({}));

if (postgresAvailable()) {
  suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
} else {
  it.skip(`admin API on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}
