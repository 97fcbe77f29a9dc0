/**
 * Purging every memory of a scope that another identity is linked into, through the admin API
 * over real HTTP (`POST /links`, `DELETE /scopes/:key/memories`, `GET /links`) and the agent on a
 * real SQLite store with the real Anthropic SDK against the loopback double.
 *
 * A purge removes what was learned; the scope, what the person said and the links stay
 * (scope-data-map.ts: IdentityLink `purge: 'keep'`): the identities are still one person, so the
 * linked identity's next message is answered, lands in the shared (purged) scope, and its prompt
 * holds none of the purged memories. Nothing is written into the linked identity's own, emptied
 * scope, and no scope is created for it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createAgent, type Agent } from '../../src/agent/agent';
import { createApiServer } from '../../src/api/server';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const TOKEN = 'admin-token-linked-purge-0123456789';
const TELEGRAM_USER = '6201';
const TELEGRAM = `telegram:private:${TELEGRAM_USER}`;
const TERMINAL = 'terminal:bo';
const PURGED = 'Bo keeps bees on a Lisbon rooftop';
const TEST_TIMEOUT_MS = 120_000;

describe('purging a scope that an identity is linked into', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let agent: Agent;
  let app: FastifyInstance;
  let base: string;
  let n = 0;

  const say = (scopeKey: string, text: string) =>
    agent.handle({
      channel: scopeKey.split(':')[0]!,
      scopeKey,
      scopeKind: scopeKey === TELEGRAM ? 'private' : 'user',
      authorName: 'Bo',
      ...(scopeKey === TELEGRAM && { authorId: TELEGRAM_USER }),
      text,
      timestamp: new Date(Date.parse('2026-03-02T09:00:00Z') + n * 60_000),
      externalId: `m${n++}`,
    });

  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({ dataDir: tempDir('nocturne-linked-purge-'), provider: 'anthropic', url: double.url });
    agent = createAgent({ ...agentServices(h.core) });
    app = await createApiServer({
      ...h.core,
      timeZone: h.core.config.timeZone,
      token: TOKEN,
      logger: h.core.logger,
      links: { identities: h.core.identities, codes: h.core.linkCodes },
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await h?.core.close();
    await double?.stop();
  });

  it(
    'keeps the link: the linked identity’s next message is answered in the purged scope, without the purged memories',
    async () => {
      expect((await say(TELEGRAM, 'Hello from Telegram')).degraded).toBeUndefined();
      expect((await say(TERMINAL, 'Hello from the terminal')).degraded).toBeUndefined();
      const joined = await call('POST', '/links', { identity: TERMINAL, into: TELEGRAM });
      expect(joined.status).toBe(200);
      const shared = (await h.core.scopes.findByKey(TELEGRAM))!;
      const own = (await h.core.scopes.findByKey(TERMINAL))!;
      await h.core.db.prisma.$transaction((tx) =>
        createMemory(tx, { scopeId: shared.id, category: 'fact', content: PURGED, confidence: 0.9 }, { by: 'owner', now: new Date() }),
      );
      expect(JSON.stringify(await say(TERMINAL, 'What do I keep on my rooftop, before?'))).toBeDefined();
      expect(JSON.stringify(h.requests.filter((r) => r.purpose === 'reply').at(-1))).toContain(PURGED);

      const purged = await call('DELETE', `/scopes/${encodeURIComponent(TELEGRAM)}/memories`);
      expect(purged).toEqual({ status: 200, json: { success: true, deletedCount: expect.any(Number) } });
      expect(purged.json.deletedCount).toBeGreaterThanOrEqual(1);

      const scopesBefore = await h.core.db.prisma.scope.count();
      const ownEpisodesBefore = await h.core.db.prisma.episode.count({ where: { scopeId: own.id } });
      const reply = await say(TERMINAL, 'What do I keep on my rooftop, after the purge?');
      expect(reply.degraded).toBeUndefined();
      const prompt = JSON.stringify(h.requests.filter((r) => r.purpose === 'reply').at(-1));
      expect(prompt).toContain('after the purge');
      expect(prompt).not.toContain(PURGED);
      const stored = await h.core.db.prisma.episode.findUnique({ where: { id: reply.episodeIds!.user! } });
      expect(stored?.scopeId).toBe(shared.id);
      expect(await h.core.db.prisma.episode.count({ where: { scopeId: own.id } })).toBe(ownEpisodesBefore);
      expect(await h.core.db.prisma.scope.count()).toBe(scopesBefore);
      expect((await say(TELEGRAM, 'And Telegram after the purge')).degraded).toBeUndefined();

      const links = await call('GET', '/links');
      expect(links.json.links).toEqual([expect.objectContaining({ identityKey: TERMINAL, scopeId: shared.id, scopeKey: TELEGRAM, state: 'linked' })]);
      // eslint-disable-next-line no-console
      console.log(`linked-scope-purge: purged ${purged.json.deletedCount}; the linked identity's next turn stored in the shared scope`);
    },
    TEST_TIMEOUT_MS,
  );
});
