/**
 * Two identities of one person writing at the same moment: the owner's Telegram chat and the
 * owner's terminal (OWNER_TELEGRAM_USER_ID, OWNER_TERMINAL_USER) speak into one scope, and the
 * agent takes a message from each at once, round after round, on a real SQLite store with the
 * real Anthropic SDK against the loopback double. The agent's work on a scope runs one turn at a
 * time whichever identity the turn came from, so the shared scope ends with one open
 * conversation whose turns are numbered 0, 1, 2, ... without a gap or a repeat, and whose working
 * memory holds every turn (no reply's save overwrote another's).
 *
 * The same through the channels, as `npm start` composes them (`startService`): the real grammY
 * bot against the loopback Bot API and the signed webhook, the owner's Telegram chat and webhook
 * sender (OWNER_WEBHOOK_SENDER) each sending at the same moment, round after round.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { createAgent, type Agent } from '../../src/agent/agent';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import type { Core } from '../../src/core';
import { agentServices, startService, type RunningService } from '../../src/service';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { freePort } from '../chaos/chaos-support';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const OWNER_TELEGRAM = '6101';
const TELEGRAM = `telegram:private:${OWNER_TELEGRAM}`;
const TERMINAL = 'terminal:ana';
/** Rounds of two simultaneous messages (the first round also opens the conversation twice at once). */
const ROUNDS = 6;
const TEST_TIMEOUT_MS = 180_000;
const REPLY_TIMEOUT_MS = 60_000;
const WEBHOOK_SECRET = 'linked-turns-webhook-secret-0123456789';

/** The shared scope's conversation figures: conversations, episodes, distinct turn numbers, turns in the working memory. */
async function figuresOf(core: Core, scopeKey: string) {
  const scope = (await core.scopes.findByKey(scopeKey))!;
  const conversations = await core.db.prisma.conversation.count({ where: { scopeId: scope.id } });
  const episodes = await core.db.prisma.episode.findMany({ where: { scopeId: scope.id }, select: { turn: true } });
  const turns = episodes.map((e) => e.turn ?? -1).sort((a, b) => a - b);
  const memory = await core.conversations.find(scope.id);
  return {
    figures: { conversations, episodes: episodes.length, distinctTurns: new Set(turns).size, inWorkingMemory: memory?.state.recentTurnIds.length ?? 0 },
    turns,
  };
}

describe('linked identities writing at once into one scope', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let agent: Agent;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({
      dataDir: tempDir('nocturne-linked-turns-'),
      provider: 'anthropic',
      url: double.url,
      env: { OWNER_TELEGRAM_USER_ID: OWNER_TELEGRAM, OWNER_TERMINAL_USER: 'ana' },
    });
    agent = createAgent({ ...agentServices(h.core) });
  });
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it(
    'serializes the turns of both identities: one conversation, turns numbered without repeats, all in the working memory',
    async () => {
      const base = Date.parse('2026-03-02T09:00:00Z');
      for (let round = 0; round < ROUNDS; round++) {
        const at = new Date(base + round * 60_000);
        const replies = await Promise.all([
          agent.handle({
            channel: 'telegram',
            scopeKey: TELEGRAM,
            scopeKind: 'private',
            authorName: 'Ana',
            authorId: OWNER_TELEGRAM,
            text: `telegram says ${round}`,
            timestamp: at,
            externalId: `tg-${round}`,
          }),
          agent.handle({
            channel: 'terminal',
            scopeKey: TERMINAL,
            scopeKind: 'user',
            authorName: 'Ana',
            text: `terminal says ${round}`,
            timestamp: at,
            externalId: `term-${round}`,
          }),
        ]);
        expect(replies.map((r) => r.degraded ?? 'ok')).toEqual(['ok', 'ok']);
      }

      expect(await h.core.scopes.findByKey(TERMINAL)).toBeNull();
      const { figures, turns } = await figuresOf(h.core, TELEGRAM);
      // eslint-disable-next-line no-console
      console.log(`agent-linked-turns: ${JSON.stringify(figures)}`);
      expect(figures).toEqual({ conversations: 1, episodes: 4 * ROUNDS, distinctTurns: 4 * ROUNDS, inWorkingMemory: 4 * ROUNDS });
      expect(turns).toEqual(Array.from({ length: 4 * ROUNDS }, (_, i) => i));
    },
    TEST_TIMEOUT_MS,
  );
});

describe('the owner’s Telegram chat and webhook sender writing at once (the service’s channels)', () => {
  let anthropic: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let webhookBase: string;
  const owner = { id: 6301, first_name: 'Ana' };

  beforeAll(async () => {
    anthropic = await startAnthropicDouble();
    fake = await startFakeTelegram();
    const webhookPort = await freePort();
    const config = loadConfig({
      env: {
        DATA_DIR: `${tempDir('nocturne-linked-turns-service-')}/data`,
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'sk-ant-linked-turns-000000',
        ANTHROPIC_BASE_URL: anthropic.url,
        SLEEP_ENABLED: 'false',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(owner.id),
        OWNER_TELEGRAM_USER_ID: String(owner.id),
        OWNER_WEBHOOK_SENDER: 'app:ana',
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
      },
      envFile: false,
    });
    service = await startService(
      config,
      memoryLogger().logger,
      { input: new PassThrough(), output: new PassThrough() },
      { embedder: createHashEmbedder({ dimension: 64 }) },
    );
    webhookBase = `http://127.0.0.1:${webhookPort}`;
  });
  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await anthropic?.stop();
  });

  const webhook = async (text: string): Promise<number> => {
    const body = JSON.stringify({ user: 'ana', name: 'Ana', text });
    const response = await fetch(`${webhookBase}/webhook/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, path: '/webhook/app', body }) },
      body,
    });
    await response.text();
    return response.status;
  };

  const telegram = async (text: string): Promise<void> => {
    const before = fake.sent(owner.id).length;
    fake.message(owner, text);
    await fake.waitFor(() => fake.sent(owner.id).length > before, REPLY_TIMEOUT_MS, `the answer to ${text}`);
  };

  it(
    'one conversation, turns numbered without repeats, every turn in the working memory',
    async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [status] = await Promise.all([webhook(`webhook says ${round}`), telegram(`telegram says ${round}`)]);
        expect(status).toBe(200);
      }
      const { figures, turns } = await figuresOf(service.core, `telegram:private:${owner.id}`);
      // eslint-disable-next-line no-console
      console.log(`agent-linked-turns (channels): ${JSON.stringify(figures)}`);
      expect(figures).toEqual({ conversations: 1, episodes: 4 * ROUNDS, distinctTurns: 4 * ROUNDS, inWorkingMemory: 4 * ROUNDS });
      expect(turns).toEqual(Array.from({ length: 4 * ROUNDS }, (_, i) => i));
    },
    TEST_TIMEOUT_MS,
  );
});
