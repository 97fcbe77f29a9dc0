/**
 * Isolation under chaos (issue 8): 50 scopes of mixed kinds (Telegram private chats and groups,
 * webhook users and sources, terminal users), each with marker words of its own in its episodes,
 * memories (consolidated through the Anthropic double, then corrected, contradicted and linked
 * through the memory writer), entities, digests and soul. Then, for every scope, every output
 * path is read and must hold no marker of any other scope:
 *
 * - hybrid search with every strategy, with queries made of *other* scopes' markers, tags and
 *   shared words; the context for a reply (retrieveContext);
 * - every prompt the model received: consolidation of that scope, and the agent's replies, where
 *   the (scripted) model calls memory_search with foreign markers and memory_get /
 *   memory_update with foreign ids;
 * - the digest, the soul (text and data), the JSON and Markdown exports;
 *   (memories: a random 20 scopes are consolidated through the double, the rest written directly
 *   through the memory writer, to keep the run short; every scope's sleep dry run still sends a
 *   consolidation prompt);
 * - every admin API route of the scope, including another scope's ids in the path (404, never
 *   data, nothing deleted) and the sleep dry run (its consolidation prompt);
 * - the webhook's answers, and for a random subset of Telegram scopes the real bot against the
 *   fake Bot API: a message, /memories, /why, /forget (words: preview, Keep; foreign words),
 *   /digest and /export (both documents).
 * Finally every row of every scope-owned table is checked for foreign markers.
 *
 * Seeded: the seed is printed; CHAOS_SEED=<n> replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import type { Agent } from '../../src/agent/agent';
import type { InboundMessage, ScopeKind } from '../../src/agent/inbound-message';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import type { Core } from '../../src/core';
import { exportScope } from '../../src/export/json-export';
import { renderMarkdownExport } from '../../src/export/markdown-export';
import { serializeScopeExport } from '../../src/export/scope-document';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { contradictMemory, createMemory, linkMemories, supersedeMemory } from '../../src/memory/memories/memory-writer';
import type { SearchStrategy } from '../../src/memory/retrieval/memory-query';
import { buildDigest } from '../../src/memory/digests/digest';
import { regenerateSoul, soulMarkdown } from '../../src/memory/profiles/soul';
import { startService, type RunningService } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startFakeTelegram, type FakeChat, type FakeTelegramServer, type FakeUser, type SentMessage } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { chaosSeed, createMarkerFactory, createRng, elapsed, freePort, markersIn, type Rng } from './chaos-support';

const SCOPES = 50;
const BOT_SCOPES = 10;
/** Scopes consolidated through the model double; the others get their memories from the memory writer (faster). */
const CONSOLIDATED_SCOPES = 20;
const ADMIN_TOKEN = 'chaos-admin-token-0123456789';
const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
const STRATEGIES: readonly SearchStrategy[] = ['hybrid', 'semantic', 'keyword', 'temporal'];
/** Shared first names and words: every scope uses them, so a leak has something to match on. */
const NAMES = ['Ana', 'Ben', 'Carla', 'Dev', 'Eli'];
const SHARED_QUERY = 'sister coffee dog walks park dinner tea vet friends work';

type Kind = 'tg-private' | 'tg-group' | 'webhook-user' | 'webhook-source' | 'terminal';

interface ChaosScope {
  readonly n: number;
  readonly kind: Kind;
  readonly key: string;
  readonly channel: string;
  readonly scopeKind: ScopeKind;
  readonly title: string;
  readonly ownerId?: string;
  /** The person who talks in it (Telegram: the user; a group: one allowed member). */
  readonly person: string;
  readonly user?: FakeUser;
  readonly chat?: FakeChat;
  readonly webhook?: { source: string; user?: string };
  /** place, pet, hobby, food: words no other scope has. */
  readonly markers: readonly string[];
  id: string;
  memoryIds: string[];
  episodeIds: string[];
}

function makeScopes(rng: Rng): ChaosScope[] {
  const marker = createMarkerFactory(rng);
  const kinds: Kind[] = ['tg-private', 'tg-group', 'webhook-user', 'webhook-source', 'terminal'];
  // Every kind at least once, enough Telegram scopes for the bot subset, the rest at random.
  const chosen: Kind[] = [...kinds, ...Array.from({ length: BOT_SCOPES }, (_, i) => (i % 3 === 0 ? 'tg-group' : 'tg-private') as Kind)];
  while (chosen.length < SCOPES)
    chosen.push(rng.pick(['tg-private', 'tg-private', 'tg-group', 'webhook-user', 'webhook-user', 'webhook-source', 'terminal'] as Kind[]));
  return rng.shuffle(chosen).map((kind, n) => {
    const person = rng.pick(NAMES);
    const markers = [marker(), marker(), marker(), marker()];
    const base = { n, kind, person, markers, id: '', memoryIds: [], episodeIds: [] };
    switch (kind) {
      case 'tg-private': {
        const user = { id: 200_000 + n, first_name: person };
        return { ...base, key: `telegram:private:${user.id}`, channel: 'telegram', scopeKind: 'private', title: person, ownerId: String(user.id), user };
      }
      case 'tg-group': {
        const user = { id: 300_000 + n, first_name: person };
        const chat: FakeChat = { id: -(500_000 + n), type: 'group', title: `Group ${n}` };
        return { ...base, key: `telegram:group:${chat.id}`, channel: 'telegram', scopeKind: 'group', title: `Group ${n}`, user, chat };
      }
      case 'webhook-user': {
        const source = rng.pick(['crm', 'helpdesk', 'homeauto']);
        return { ...base, key: `webhook:${source}:u${n}`, channel: 'webhook', scopeKind: 'private', title: person, webhook: { source, user: `u${n}` } };
      }
      case 'webhook-source':
        return { ...base, key: `webhook:feed${n}`, channel: 'webhook', scopeKind: 'source', title: `feed${n}`, webhook: { source: `feed${n}` } };
      case 'terminal':
        return { ...base, key: `terminal:user${n}`, channel: 'terminal', scopeKind: 'user', title: `user${n}` };
      default:
        throw new Error(`unknown scope kind ${kind satisfies never}`);
    }
  });
}

/** What a scope's person said, with its markers and the shared words. */
function episodesOf(s: ChaosScope, now: Date) {
  const [place, pet, hobby, food] = s.markers as [string, string, string, string];
  const texts = [
    `My sister lives in ${place} and we drink coffee together every summer.`,
    `Our dog ${pet} loves long walks in the park.`,
    `On weekends I practise ${hobby} with friends from work.`,
    `My favourite dinner is ${food} with green tea.`,
    `Our dog ${pet} has a vet appointment next Tuesday near ${place}.`,
  ];
  return texts.map((content, i) => ({
    content,
    role: 'user',
    author: s.person,
    // Said by the chat's person, as the channels record it: in a group, /memories and /forget of a member reach it.
    ...(s.user ? { authorId: String(s.user.id) } : {}),
    timestamp: new Date(now.getTime() - (30 - i * 6) * 3_600_000).toISOString(),
    externalId: `seed-${s.n}-${i}`,
    conversationId: `seed-conversation-${s.n}`,
    metadata: { topics: ['family', 'coffee'], entities: ['Bea', i === 1 || i === 4 ? pet : place] },
  }));
}

/** A model that answers like a consolidation model, or scripts memory-tool calls for replies. */
interface ReplyPlan {
  query: string;
  foreignMemoryId: string;
  foreignEpisodeId: string;
}

function consolidationAnswer(seen: Omit<SeenLlmRequest, 'reply'>): string {
  const prompt = seen.messages.at(-1)?.text ?? '';
  const episodes = [...prompt.matchAll(/^(E\d+) \S+ \S+ user(?: \(([^)]*)\))?[^:]*: (.*)$/gm)].map((m) => ({
    n: m[1]!,
    author: m[2] ?? 'The person',
    text: m[3]!,
  }));
  const memories = [...prompt.matchAll(/^(M\d+) \[/gm)].map((m) => m[1]!);
  const categories = ['relationship', 'interest', 'preference', 'fact', 'routine'];
  const pets = episodes.map((e) => ({ e, pet: /\bdog (\w+)/.exec(e.text)?.[1] })).filter((p) => p.pet);
  const answer = {
    new: episodes.map((e, i) => ({
      category: categories[i % categories.length],
      content: `${e.author} said: ${e.text.replace(/^(my|our|i) /i, '')}`,
      confidence: 0.85,
      source: 'stated',
      episodes: [e.n],
    })),
    reinforce: memories.slice(0, 1).map((m) => ({ memory: m, episodes: [episodes[0]?.n ?? 'E1'], reason: 'mentioned again' })),
    importance: episodes.map((e) => ({ episode: e.n, score: 0.5 })),
    entities: pets.map(({ e, pet }) => ({ name: pet, kind: 'pet', observations: [`${pet} loves walks`], favorability: 0.1, episodes: [e.n] })),
  };
  return JSON.stringify(answer);
}

/** What consolidation would have learned, written through the memory writer: a memory per message, the pet, the soul. */
async function learnDirectly(core: Core, s: ChaosScope, now: Date): Promise<void> {
  const prisma = core.db.prisma;
  const episodes = await prisma.episode.findMany({ where: { scopeId: s.id }, orderBy: { timestamp: 'asc' } });
  const categories = ['relationship', 'interest', 'preference', 'fact', 'routine'];
  await prisma.$transaction(async (tx) => {
    for (const [i, e] of episodes.entries()) {
      await createMemory(
        tx,
        {
          scopeId: s.id,
          category: categories[i % categories.length]!,
          content: `${s.person} said: ${e.content.replace(/^(my|our|i) /i, '')}`,
          confidence: 0.85,
          sourceEpisodeIds: [e.id],
        },
        { now },
      );
    }
  });
  const pet = await prisma.entity.create({ data: { scopeId: s.id, key: s.markers[1]!, name: s.markers[1]!, kind: 'pet', favorability: 0.4 } });
  await prisma.entityObservation.create({ data: { scopeId: s.id, entityId: pet.id, episodeId: episodes[1]!.id, content: `${s.markers[1]} loves walks` } });
  await prisma.episode.updateMany({ where: { scopeId: s.id }, data: { consolidated: true, consolidatedAt: now } });
  await regenerateSoul(prisma, s.id, { now });
}

/** Every text of a request the model reads from us: system, user and tool messages (not its own calls). */
function promptTexts(request: SeenLlmRequest): string[] {
  return [request.system ?? '', ...request.messages.filter((m) => m.role !== 'assistant').map((m) => m.text)];
}

describe(`isolation across ${SCOPES} scopes (seeded chaos)`, () => {
  const seed = chaosSeed('isolation');
  const rng = createRng(seed);
  const scopes = makeScopes(rng);
  const logs = memoryLogger();
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let core: Core;
  let agent: Agent;
  let apiBase: string;
  let webhookBase: string;
  let replyPlan: ReplyPlan | undefined;
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-iso-');
  const figures = { outputs: 0, prompts: 0, searches: 0, apiCalls: 0, botMessages: 0, botDocuments: 0, webhookReplies: 0, rowsChecked: 0 };
  const hits: string[] = [];

  /** Records a foreign-marker check of one output of scope `s`. */
  function check(s: ChaosScope, where: string, text: string, extraAllowed: readonly string[] = []): void {
    figures.outputs++;
    const foreign = scopes
      .filter((o) => o !== s)
      .flatMap((o) => o.markers)
      .filter((m) => !extraAllowed.includes(m));
    const found = markersIn(text, foreign);
    if (found.length > 0) {
      const owners = found.map((m) => scopes.find((o) => o.markers.includes(m))!.key);
      hits.push(`${s.key} ${where}: ${found.map((m, i) => `${m} (of ${owners[i]})`).join(', ')}`);
    }
  }

  function foreignScopes(s: ChaosScope, n: number): ChaosScope[] {
    return rng.sample(
      scopes.filter((o) => o !== s),
      n,
    );
  }

  /** Runs `work` and checks every model request it caused as scope `s`'s. */
  async function withPrompts<T>(s: ChaosScope, where: string, work: () => Promise<T>): Promise<T> {
    const before = double.requests.length;
    const result = await work();
    for (const request of double.requests.slice(before)) {
      figures.prompts++;
      check(s, `${where} prompt`, promptTexts(request).join('\n'));
    }
    return result;
  }

  beforeAll(async () => {
    double = await startAnthropicDouble({
      responder: (seen) => {
        if (seen.system?.includes('memory consolidation system')) return { kind: 'text', text: consolidationAnswer(seen) };
        if (seen.tools.length > 0) {
          const last = seen.messages.at(-1);
          if (last?.role === 'tool' || !replyPlan) return { kind: 'text', text: 'Thanks, I will keep that in mind.' };
          return {
            kind: 'tool_use',
            calls: [
              { name: 'memory_search', arguments: { query: replyPlan.query, limit: 10 } },
              { name: 'memory_get', arguments: { id: replyPlan.foreignMemoryId } },
              { name: 'memory_get', arguments: { id: replyPlan.foreignEpisodeId } },
              { name: 'memory_update', arguments: { mode: 'replace', id: replyPlan.foreignMemoryId, content: 'Overwritten from another scope' } },
            ],
          };
        }
        return { kind: 'text', text: '{}' };
      },
    });
    fake = await startFakeTelegram();
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'sk-ant-chaos-isolation-000000',
        ANTHROPIC_BASE_URL: double.url,
        SLEEP_ENABLED: 'false',
        LOG_LEVEL: 'info',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: scopes.flatMap((s) => (s.user ? [s.user.id] : [])).join(','),
        TELEGRAM_GROUPS: 'true',
        ADMIN_TOKEN,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
      },
      envFile: false,
    });
    // The service as `npm start` composes it: the agent behind the bot and the webhook, the admin API.
    service = await startService(
      config,
      logs.logger,
      { input: new PassThrough(), output: new PassThrough() },
      { embedder: createHashEmbedder({ dimension: 64 }) },
    );
    ({ core, agent } = service);
    apiBase = `http://127.0.0.1:${apiPort}`;
    webhookBase = `http://127.0.0.1:${webhookPort}`;

    // Seed: scopes, episodes, consolidation through the double, then corrections and links.
    const now = new Date();
    for (const s of scopes) {
      const row = await core.scopes.ensure({ key: s.key, channel: s.channel, kind: s.scopeKind, title: s.title, ...(s.ownerId ? { ownerId: s.ownerId } : {}) });
      s.id = row.id;
      await core.episodeService.ingestMany(
        { key: s.key, channel: s.channel, kind: s.scopeKind },
        episodesOf(s, now).map((e) => core.episodeService.normalize(e, s.channel)),
      );
    }
    await core.embeddingWorker.drain();
    const consolidated = new Set(rng.sample(scopes, CONSOLIDATED_SCOPES));
    for (const s of scopes) {
      if (consolidated.has(s)) {
        const outcome = await withPrompts(s, 'consolidation', () => core.scheduler.consolidateNow(s.id));
        expect(outcome.status).toBe('succeeded');
      } else await learnDirectly(core, s, now);
    }
    for (const s of scopes) {
      const memories = await core.db.prisma.memory.findMany({ where: { scopeId: s.id }, orderBy: { createdAt: 'asc' } });
      expect(memories.length).toBeGreaterThanOrEqual(5);
      const [a, b, c] = memories as [(typeof memories)[0], (typeof memories)[0], (typeof memories)[0]];
      await core.db.prisma.$transaction(async (tx) => {
        await supersedeMemory(
          tx,
          s.id,
          c.id,
          { content: `${s.person} now practises ${s.markers[2]} twice a week` },
          { by: 'owner', now, reason: `more ${s.markers[2]} lately` },
        );
        await contradictMemory(tx, s.id, a.id, b.id, { now, reason: `${s.markers[1]} and ${s.markers[0]} do not fit` });
        await linkMemories(tx, s.id, a.id, b.id, 'related', 0.8, { now, reason: `both about ${s.markers[0]}` });
      });
      s.memoryIds = (await core.db.prisma.memory.findMany({ where: { scopeId: s.id }, select: { id: true } })).map((m) => m.id);
      s.episodeIds = (await core.db.prisma.episode.findMany({ where: { scopeId: s.id }, select: { id: true } })).map((e) => e.id);
      await buildDigest(core.db.prisma, s.id, { periodEnd: new Date(now.getTime() + 1_000), now });
    }
    await core.embeddingWorker.drain();

    // eslint-disable-next-line no-console
    console.log(
      `isolation: seeded ${SCOPES} scopes (${Object.entries(countBy(scopes.map((s) => s.kind)))
        .map(([k, v]) => `${v} ${k}`)
        .join(', ')}) in ${elapsed(started)}`,
    );
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps every scope to itself in search (every strategy) and in the context for a reply', async () => {
    for (const s of scopes) {
      const foreign = foreignScopes(s, 3);
      const foreignWords = foreign.map((o) => rng.pick(o.markers));
      const queries = [`${foreignWords.join(' ')} ${SHARED_QUERY} ${s.markers[0]}`, `${s.person} ${foreignWords.join(' ')}`];
      for (const strategy of STRATEGIES) {
        for (const query of queries) {
          const { results } = await core.search.search({
            scopeId: s.id,
            semanticQuery: query,
            strategy,
            limit: 50,
            includeInactive: true,
            timeRange: strategy === 'temporal' ? { start: new Date(0), end: new Date(Date.now() + 86_400_000) } : undefined,
          });
          figures.searches++;
          check(s, `search ${strategy} "${query}"`, JSON.stringify(results));
        }
      }
      // Tag filters with foreign and shared tags.
      const tagged = await core.search.search({
        scopeId: s.id,
        semanticQuery: SHARED_QUERY,
        entities: ['bea', ...foreign.map((o) => o.markers[1]!)],
        topics: ['coffee'],
        limit: 50,
      });
      figures.searches++;
      check(s, 'search by tags', JSON.stringify(tagged.results));
      // So the check can fail: a scope's own markers are found.
      const own = await core.search.search({ scopeId: s.id, semanticQuery: s.markers[3]!, strategy: 'keyword', limit: 5 });
      expect(own.results.some((r) => r.content.includes(s.markers[3]!))).toBe(true);

      const context = await core.context.retrieveContext({ scopeId: s.id, message: `${foreignWords.join(' ')} ${SHARED_QUERY}` });
      check(s, 'retrieveContext', JSON.stringify(context));
    }
  }, 120_000);

  it('never shows the model anything of another scope: agent replies with foreign tool calls', async () => {
    for (const s of scopes) {
      const [o1, o2] = foreignScopes(s, 2) as [ChaosScope, ChaosScope];
      const foreignMemoryId = rng.pick(o1.memoryIds);
      const before = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: foreignMemoryId } });
      replyPlan = { query: `${rng.pick(o1.markers)} ${rng.pick(o2.markers)} ${SHARED_QUERY}`, foreignMemoryId, foreignEpisodeId: rng.pick(o2.episodeIds) };
      const message: InboundMessage = {
        channel: s.channel,
        scopeKey: s.key,
        scopeKind: s.scopeKind,
        authorName: s.person,
        text: `What do you remember about ${s.markers[1]}, my sister and coffee?`,
        timestamp: new Date(),
        externalId: `agent-${s.n}`,
      };
      const reply = await withPrompts(s, 'agent reply', () => agent.handle(message));
      replyPlan = undefined;
      expect(reply.degraded).toBeUndefined();
      expect(reply.toolCalls).toEqual(['memory_search', 'memory_get', 'memory_get', 'memory_update']);
      check(s, 'agent reply text', reply.text);
      // The foreign memory was neither read nor changed.
      const after = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: foreignMemoryId } });
      expect(after).toEqual(before);
      const toolMessages = double.requests
        .at(-1)!
        .messages.filter((m) => m.role === 'tool')
        .map((m) => m.text);
      expect(toolMessages.slice(1)).toEqual([expect.stringMatching(/^not found/), expect.stringMatching(/^not found/), expect.stringMatching(/not found/)]);
      // The search found this scope's own things (so a leak would have had room to show).
      expect(markersIn(toolMessages[0]!, s.markers).length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('keeps digests, souls and both exports to their own scope', async () => {
    for (const s of scopes) {
      const digests = await core.db.prisma.digest.findMany({ where: { scopeId: s.id } });
      expect(digests.length).toBeGreaterThan(0);
      check(s, 'digests', JSON.stringify(digests));
      const fresh = await buildDigest(core.db.prisma, s.id, { periodEnd: new Date(), now: new Date() });
      check(s, 'new digest', JSON.stringify(fresh));
      const soul = await soulMarkdown(core.db.prisma, s.id);
      expect(soul).toContain(s.markers[1]!); // the pet's profile, so the check can fail
      check(s, 'soul', soul);
      check(s, 'profile data', JSON.stringify(await core.db.prisma.profile.findUnique({ where: { scopeId: s.id } })));
      const doc = await exportScope(core.db.prisma, s.id);
      check(s, 'JSON export', serializeScopeExport(doc));
      const markdown = [...renderMarkdownExport(doc, { defaultTimeZone: 'UTC' })].map(([file, text]) => `${file}\n${text}`).join('\n');
      expect(markdown).toContain(s.markers[0]!);
      check(s, 'Markdown export', markdown);
    }
  }, 120_000);

  it('answers the admin API per scope, and another scope\u2019s ids in a path with 404, never data', async () => {
    const call = async (s: ChaosScope, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${apiBase}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      figures.apiCalls++;
      check(s, `API ${method} ${path}`, text);
      return { status: response.status, text };
    };
    // Every GET route of the OpenAPI document that names a scope (so a new one is covered by itself).
    const doc = JSON.parse(await fetch(`${apiBase}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((r) => r.text())) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const scoped = Object.entries(doc.paths)
      .filter(([template, operations]) => 'get' in operations && template.includes('{id}'))
      .map(([template]) => template);
    expect(scoped).toEqual(expect.arrayContaining(['/scopes/{id}/memories', '/scopes/{id}/memories/{mid}', '/scopes/{id}/episodes', '/scopes/{id}/audit']));
    for (const s of scopes) {
      const [o] = foreignScopes(s, 1) as [ChaosScope];
      const foreignMemory = rng.pick(o.memoryIds);
      const ownMemory = rng.pick(s.memoryIds);
      for (const template of scoped) expect((await call(s, 'GET', template.replace('{id}', s.id).replace('{mid}', ownMemory))).status).toBe(200);
      // Another scope's memory in this scope's path, and this scope's memory in another's: 404.
      for (const template of scoped.filter((t) => t.includes('{mid}'))) {
        expect((await call(s, 'GET', template.replace('{id}', s.id).replace('{mid}', foreignMemory))).status).toBe(404);
        expect((await call(o, 'GET', template.replace('{id}', o.id).replace('{mid}', ownMemory))).status).toBe(404);
      }
      expect((await call(s, 'GET', `/scopes/${s.id}/memories?state=all&limit=500`)).status).toBe(200);
      expect((await call(s, 'DELETE', `/scopes/${s.id}/memories/${foreignMemory}`)).status).toBe(404);
      expect((await call(s, 'GET', `/scopes/${s.id}/memories/${rng.pick(o.episodeIds)}`)).status).toBe(404);
      expect(await core.db.prisma.memory.count({ where: { id: foreignMemory } })).toBe(1);
      const foreignQuery = `${o.markers.join(' ')} ${SHARED_QUERY}`;
      for (const strategy of STRATEGIES) {
        expect((await call(s, 'POST', `/scopes/${s.id}/search`, { query: foreignQuery, strategy, limit: 200, includeInactive: true })).status).toBe(200);
      }
      expect((await call(s, 'GET', `/scopes/${s.id}/episodes?limit=500`)).status).toBe(200);
      expect((await call(s, 'GET', `/scopes/${s.id}/audit?limit=500`)).status).toBe(200);
      expect((await call(s, 'GET', `/scopes/${o.id}/memories/${ownMemory}`)).status).toBe(404);
      const dry = await withPrompts(s, 'sleep dry run', () => call(s, 'POST', `/scopes/${s.id}/sleep`, { dryRun: true }));
      expect(dry.status).toBe(200);
    }
    // The one route that lists every scope shows keys and counts, never content.
    const list = await fetch(`${apiBase}/scopes`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((r) => r.text());
    expect(
      markersIn(
        list,
        scopes.flatMap((s) => s.markers),
      ),
    ).toEqual([]);
  }, 120_000);

  it('answers webhook scopes through the agent with nothing of the others', async () => {
    for (const s of scopes.filter((x) => x.webhook)) {
      const body = JSON.stringify({
        ...(s.webhook!.user ? { user: s.webhook!.user, name: s.person } : {}),
        text: `Tell me about ${s.markers[3]} and coffee`,
        messageId: `wh-${s.n}`,
      });
      const response = await withPrompts(s, 'webhook', () =>
        fetch(`${webhookBase}/webhook/${s.webhook!.source}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, path: `/webhook/${s.webhook!.source}`, body }) },
          body,
        }),
      );
      expect(response.status).toBe(200);
      figures.webhookReplies++;
      check(s, 'webhook reply', await response.text());
    }
  }, 60_000);

  it('keeps every bot command to its chat (a random subset of Telegram scopes through the real bot)', async () => {
    const telegram = scopes.filter((s) => s.user);
    const subset = rng.sample(telegram, BOT_SCOPES);
    for (const s of subset) {
      const chatId = s.chat?.id ?? s.user!.id;
      const send = async (text: string, done: (messages: SentMessage[]) => boolean): Promise<SentMessage[]> => {
        const before = fake.sent(chatId).length;
        fake.message(s.user!, text, s.chat ? { chat: s.chat } : {});
        return fake.waitFor(
          () => {
            const messages = fake.sent(chatId).slice(before);
            return done(messages) ? messages : undefined;
          },
          15_000,
          `the answer to ${text} in ${s.key}`,
        );
      };
      const o = foreignScopes(s, 1)[0]!;
      // In a group the bot answers only when mentioned (issue 17).
      await withPrompts(s, 'bot message', () =>
        send(`${s.chat ? `@${fake.botInfo.username} ` : ''}Do you remember ${s.markers[0]} and my sister?`, (m) => m.length >= 1),
      );
      await send('/memories', (m) => m.length >= 1);
      await send('/why 1', (m) => m.length >= 1);
      const preview = await send(`/forget ${s.markers[2]}`, (m) => m.some((x) => keepButton(x) !== undefined));
      const question = preview.find((x) => keepButton(x) !== undefined)!;
      check(s, 'bot /forget preview', question.text ?? '');
      fake.press(s.user!, question, keepButton(question)!);
      await fake.waitFor(() => question.edits > 0, 10_000, 'the Keep edit');
      const nothing = await send(`/forget ${o.markers[1]}`, (m) => m.length >= 1);
      // The answer repeats the words asked about (the person's own input), and finds nothing.
      // (In a group, a member's /forget reaches what is about them: "Nothing I remember about you mentions".)
      expect(nothing[0]!.text).toMatch(/^Nothing I remember (about you )?mentions/);
      check(s, 'bot /forget foreign words', nothing.map((m) => m.text).join('\n'), [o.markers[1]!]);
      await send('/digest', (m) => m.length >= 1);
      await send('/export', (m) => m.filter((x) => x.document).length >= 2);
      // The rest of the bot's commands: their answers are checked with every message below, and
      // /sleep's consolidation prompt (when there is anything to consolidate) like any other.
      await withPrompts(s, 'bot /sleep', () => send('/sleep', (m) => m.length >= 1));
      await send('/pause', (m) => m.length >= 1);
      await send('/resume', (m) => m.length >= 1);
      await send('/help', (m) => m.length >= 1);
      await send('/start', (m) => m.length >= 1);
      // Ending the conversation may ask the model for a memory of it: its prompt is checked too.
      await withPrompts(s, 'bot /end', () => send('/end', (m) => m.length >= 1));
      const all = fake.sent(chatId);
      for (const message of all) {
        if (message === nothing[0]) continue;
        if (message.document) {
          figures.botDocuments++;
          check(s, `bot document ${message.document.filename}`, message.document.content.toString('utf8'));
          expect(message.document.content.toString('utf8')).toContain(s.markers[0]!);
        }
        figures.botMessages++;
        check(s, 'bot message', `${message.text ?? ''}\n${message.caption ?? ''}\n${JSON.stringify(message.reply_markup ?? null)}`);
      }
    }
    // Nothing the bot did went to a chat it was not asked in, but for what the running service sends
    // unasked: a private chat's own digest (the digest sender delivers pending digests to the
    // scope's owner), whose text must hold nothing of another scope either.
    const asked = new Set(subset.map((s) => s.chat?.id ?? s.user!.id));
    for (const call of fake.calls().filter((c) => c.payload.chat_id !== undefined)) {
      const chatId = Number(call.payload.chat_id);
      if (asked.has(chatId)) continue;
      const owner = scopes.find((s) => s.kind === 'tg-private' && s.user!.id === chatId);
      const digests = (status: string) => (owner ? core.db.prisma.digest.count({ where: { scopeId: owner.id, status } }) : Promise.resolve(0));
      // The sender marks a digest sent once Telegram has answered: one still in flight gets a moment.
      let sentDigests = await digests('sent');
      for (let wait = 0; wait < 50 && sentDigests === 0 && (await digests('sending')) > 0; wait++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        sentDigests = await digests('sent');
      }
      expect({ chatId, method: call.method, ownDigest: sentDigests > 0 }).toEqual({ chatId, method: 'sendMessage', ownDigest: true });
      figures.botMessages++;
      check(owner!, 'delivered digest', String(call.payload.text ?? ''));
    }
  }, 180_000);

  it('holds no foreign marker in any row of any scope, and prints the figures', async () => {
    const prisma = core.db.prisma;
    const tables = {
      episode: await prisma.episode.findMany(),
      memory: await prisma.memory.findMany(),
      memoryLink: await prisma.memoryLink.findMany(),
      auditEvent: await prisma.auditEvent.findMany(),
      digest: await prisma.digest.findMany(),
      profile: await prisma.profile.findMany(),
      conversation: await prisma.conversation.findMany(),
      entity: await prisma.entity.findMany(),
      entityObservation: await prisma.entityObservation.findMany(),
      episodeTag: await prisma.episodeTag.findMany(),
      sleepRun: await prisma.sleepRun.findMany(),
    };
    const byId = new Map(scopes.map((s) => [s.id, s]));
    for (const [table, rows] of Object.entries(tables)) {
      for (const row of rows as Array<{ scopeId: string }>) {
        figures.rowsChecked++;
        const s = byId.get(row.scopeId);
        expect(s).toBeDefined();
        check(s!, `row of ${table}`, JSON.stringify(row));
      }
    }
    // Every scope still has its own memories (nothing was deleted across scopes).
    for (const s of scopes) expect(await prisma.memory.count({ where: { scopeId: s.id } })).toBeGreaterThanOrEqual(s.memoryIds.length);
    const summary = `isolation figures: seed ${seed}, scopes ${SCOPES} (${BOT_SCOPES} through the bot), outputs checked ${figures.outputs} (searches ${figures.searches}, model prompts ${figures.prompts}, API responses ${figures.apiCalls}, bot messages ${figures.botMessages} + documents ${figures.botDocuments}, webhook replies ${figures.webhookReplies}, rows ${figures.rowsChecked}), foreign hits ${hits.length}, ${elapsed(started)}`;
    // eslint-disable-next-line no-console
    console.log(summary);
    expect(new Set(scopes.map((s) => s.key)).size).toBe(SCOPES);
    expect(hits).toEqual([]);
  }, 60_000);
});

/** The callback data of a message's "Keep" button (the /forget question), if it has one. */
function keepButton(message: SentMessage): string | undefined {
  const button = message.reply_markup?.inline_keyboard.flat().find((b) => b.text === 'Keep');
  return button && 'callback_data' in button ? button.callback_data : undefined;
}

function countBy(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
