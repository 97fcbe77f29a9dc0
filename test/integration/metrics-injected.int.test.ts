/**
 * Issue 17, metrics: `nocturne_replies_total{memories="injected"}` counts the agent's replies that
 * were given memories (their episode's `metadata.injectedMemoryIds` is not empty), on SQLite,
 * and PostgreSQL, through real HTTP /metrics after real replies: one with memories to inject, one in a scope
 * with none.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createAgent } from '../../src/agent/agent';
import { createApiServer } from '../../src/api/server';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const TOKEN = 'admin-token-metrics-0123456789';

function suite(name: string, databaseEnv: () => Promise<Record<string, string>>) {
  describe(`metrics: replies with memories injected (issue 17, ${name})`, () => {
    let double: AnthropicDouble;
    let h: AgentCore;
    let app: FastifyInstance;
    let base: string;

    beforeAll(async () => {
      double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
      h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url, env: await databaseEnv() });
      app = await createApiServer({ ...h.core, timeZone: h.core.config.timeZone, token: TOKEN, logger: h.core.logger });
      base = await app.listen({ host: '127.0.0.1', port: 0 });
    });
    afterAll(async () => {
      await app?.close();
      await h?.core.close();
      await double?.stop();
    });

    const replies = async () => {
      const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      const value = (label: string) => Number(new RegExp(`^nocturne_replies_total\\{memories="${label}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { any: value('any'), injected: value('injected') };
    };

    it('counts a reply that carried memories, and not one that carried none', async () => {
      const core = h.core;
      let now = new Date('2026-03-02T09:00:00Z');
      const agent = createAgent({ ...agentServices(core), options: { clock: () => now } });
      await core.scopes.ensure({ key: 'telegram:private:1', channel: 'telegram', kind: 'private' });
      const scopeId = (await core.scopes.findByKey('telegram:private:1'))!.id;
      await core.db.prisma.$transaction((tx) =>
        createMemory(
          tx,
          { scopeId, category: 'preference', content: "The user's favourite drink is coffee", confidence: 0.9 },
          { by: 'owner', now, reason: 'test' },
        ),
      );
      await core.embeddingWorker.drain();

      expect(await replies()).toEqual({ any: 0, injected: 0 });
      now = new Date(now.getTime() + 60_000);
      await agent.handle({
        channel: 'telegram',
        scopeKey: 'telegram:private:1',
        scopeKind: 'private',
        authorName: 'Ana',
        authorId: '1',
        text: 'what is my favourite drink?',
        timestamp: now,
        externalId: 'm1',
      });
      now = new Date(now.getTime() + 60_000);
      await agent.handle({
        channel: 'telegram',
        scopeKey: 'telegram:private:2',
        scopeKind: 'private',
        authorName: 'Ben',
        authorId: '2',
        text: 'hello there',
        timestamp: now,
        externalId: 'm2',
      });

      const stored = await core.db.prisma.episode.findMany({ where: { role: 'agent' }, select: { scopeId: true, metadata: true } });
      const withMemories = stored.filter((e) => ((e.metadata as { injectedMemoryIds?: string[] } | null)?.injectedMemoryIds ?? []).length > 0);
      expect(stored).toHaveLength(2);
      expect(withMemories.map((e) => e.scopeId)).toEqual([scopeId]);
      expect(await replies()).toEqual({ any: 2, injected: 1 });
    }, 60_000);
  });
}

suite('SQLite', async () => ({}));

if (postgresAvailable()) {
  suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
} else {
  it.skip(`metrics on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}
