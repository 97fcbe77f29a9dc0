/**
 * Isolation with linked people (chaos): the service as `npm start` composes it (the real bot
 * against the loopback Bot API, the signed webhook, the admin API, the Anthropic double), and
 * seeded people who each talk on Telegram and through the webhook, every message carrying marker
 * words of its own. Some of them link their two identities (`/link` on Telegram, the code used
 * for their webhook identity through the admin API's POST /links/redeem); the others do not.
 *
 * Then every reply prompt of every person's webhook identity holds that person's markers only:
 * a linked person's prompt may hold what they said on Telegram, nobody's prompt holds anyone
 * else's. By construction, not by luck:
 * - a code joins only the memory of the identity that asked for it, and only once: a used code
 *   offered by another person joins nothing;
 * - a group chat cannot ask for a code;
 * - after too many wrong codes an identity is refused, even with a right one, until the window passes.
 *
 * Seeded: the seed is printed; CHAOS_SEED=<n> replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { MAX_FAILED_ATTEMPTS } from '../../src/memory/scopes/link-codes';
import { startService, type RunningService } from '../../src/service';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startFakeTelegram, type FakeChat, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { chaosSeed, createMarkerFactory, createRng, elapsed, freePort, markersIn } from './chaos-support';

const PEOPLE = 6;
const ADMIN_TOKEN = 'chaos-linked-admin-token-0123456789';
const WEBHOOK_SECRET = 'chaos-linked-webhook-secret-0123456789';
const REPLY_TIMEOUT_MS = 30_000;

interface Person {
  readonly n: number;
  readonly user: { id: number; first_name: string };
  readonly webhookUser: string;
  readonly markers: string[];
  linked: boolean;
}

describe('isolation with linked people (chaos)', () => {
  const seed = chaosSeed('linked-isolation');
  const rng = createRng(seed);
  const marker = createMarkerFactory(rng, 4);
  const started = performance.now();
  const root = tempDir('nocturne-chaos-linked-isolation-');
  const people: Person[] = Array.from({ length: PEOPLE }, (_, n) => ({
    n,
    user: { id: 8100 + n, first_name: `P${n}` },
    webhookUser: `p${n}`,
    markers: [marker(), marker(), marker()],
    linked: false,
  }));
  const group: FakeChat = { id: -8199, type: 'group', title: 'Friends' };
  const allMarkers = people.flatMap((p) => p.markers);
  const figures: string[] = [];
  let anthropic: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  const logs = memoryLogger();

  const api = async (method: string, route: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const response = await fetch(`${apiBase}${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  const webhook = async (p: Person, text: string): Promise<void> => {
    const body = JSON.stringify({ user: p.webhookUser, name: p.user.first_name, text });
    const response = await fetch(`${webhookBase}/webhook/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, path: '/webhook/app', body }) },
      body,
    });
    expect(response.status).toBe(200);
  };

  const telegram = async (p: Person, text: string, chat?: FakeChat): Promise<string> => {
    const chatId = chat?.id ?? p.user.id;
    const before = fake.sent(chatId).length;
    fake.message(p.user, text, chat ? { chat } : undefined);
    await fake.waitFor(() => fake.sent(chatId).length > before, REPLY_TIMEOUT_MS, `the answer to ${text}`);
    return fake.sent(chatId).at(-1)?.text ?? '';
  };

  const codeFrom = (answer: string): string => {
    const code = /Your link code: ([0-9A-Z]{8})/.exec(answer)?.[1];
    if (!code) throw new Error(`no code in ${JSON.stringify(answer)}`);
    return code;
  };

  beforeAll(async () => {
    anthropic = await startAnthropicDouble();
    fake = await startFakeTelegram();
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: `${root}/data`,
        TZ: 'UTC',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'sk-ant-chaos-linked-000000',
        ANTHROPIC_BASE_URL: anthropic.url,
        SLEEP_ENABLED: 'false',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: people.map((p) => p.user.id).join(','),
        TELEGRAM_GROUPS: 'true',
        ADMIN_TOKEN,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
      },
      envFile: false,
    });
    service = await startService(
      config,
      logs.logger,
      { input: new PassThrough(), output: new PassThrough() },
      { embedder: createHashEmbedder({ dimension: 64 }) },
    );
    apiBase = `http://127.0.0.1:${apiPort}`;
    webhookBase = `http://127.0.0.1:${webhookPort}`;

    // Everyone talks on both channels before anything is linked.
    for (const p of people) {
      await telegram(p, `My ${p.markers[0]} lives next to the ${p.markers[1]}.`);
      await webhook(p, `Remember the ${p.markers[2]}.`);
    }
    // Half of them, chosen by the seed, link their webhook identity to their Telegram chat.
    for (const p of rng.sample(people, PEOPLE / 2)) {
      const code = codeFrom(await telegram(p, '/link'));
      const redeemed = await api('POST', '/links/redeem', { identity: `webhook:app:${p.webhookUser}`, code });
      expect(redeemed.status).toBe(200);
      p.linked = true;
    }
    figures.push(
      `seed ${seed}: linked ${people
        .filter((p) => p.linked)
        .map((p) => `P${p.n}`)
        .join(', ')}`,
    );
  }, 180_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await anthropic?.stop();
    fs.rmSync(root, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`linked-isolation: ${figures.join('; ')}; ${elapsed(started)}`);
  });

  it('a person’s reply prompt holds their own markers only, linked or not', async () => {
    let prompts = 0;
    for (const p of people) {
      const seen = anthropic.requests.length;
      // Every person said something "lives next to" something on Telegram: retrieval has words to match in every scope.
      await webhook(p, `What lives next to what, ${p.user.first_name}?`);
      const text = anthropic.requests
        .slice(seen)
        .map((r) => JSON.stringify({ system: r.system, messages: r.messages }))
        .join('\n');
      prompts += anthropic.requests.length - seen;
      const found = markersIn(text, allMarkers);
      const foreign = found.filter((m) => !p.markers.includes(m));
      expect({ person: p.n, foreign }).toEqual({ person: p.n, foreign: [] });
      // Linked: what they said on Telegram is in the webhook's prompt; not linked: it is not.
      expect({ person: p.n, linked: p.linked, telegramSaid: found.includes(p.markers[0]!) }).toEqual({ person: p.n, linked: p.linked, telegramSaid: p.linked });
    }
    figures.push(`${prompts} reply prompts checked`);
    const { json } = await api('GET', '/links');
    expect((json.links as Array<{ state: string }>).filter((l) => l.state === 'linked')).toHaveLength(people.filter((p) => p.linked).length);
  }, 120_000);

  it('a code joins only its own person, once; a group cannot link; wrong codes are rate-limited', async () => {
    const [owner, other] = [people.find((p) => !p.linked)!, people.find((p) => p.linked)!];
    const code = codeFrom(await telegram(owner, '/link'));
    // The owner's code, used: nobody else can use it again.
    expect((await api('POST', '/links/redeem', { identity: `webhook:app:${owner.webhookUser}`, code })).status).toBe(200);
    owner.linked = true;
    const reused = await api('POST', '/links/redeem', { identity: 'webhook:app:stranger', code });
    expect(reused.status).toBe(400);
    expect(String(reused.json.message ?? JSON.stringify(reused.json))).toContain('not valid');
    // A linked identity cannot be joined to another memory without /unlink first.
    const second = codeFrom(await telegram(owner, '/link'));
    const steal = await api('POST', '/links/redeem', { identity: `webhook:app:${other.webhookUser}`, code: second });
    expect(steal.status).toBe(400);
    // A group chat is many people: it cannot ask for a code.
    const inGroup = await telegram(other, '/link', group);
    expect(inGroup).toContain('group chat cannot be linked');
    expect(inGroup).not.toMatch(/Your link code/);
    // Wrong codes: after the limit even a right one is refused.
    const fresh = codeFrom(await telegram(people.find((p) => !p.linked)!, '/link'));
    for (let i = 0; i < MAX_FAILED_ATTEMPTS; i++)
      expect((await api('POST', '/links/redeem', { identity: 'webhook:app:guesser', code: `WRONG${i}00` })).status).toBe(400);
    const limited = await api('POST', '/links/redeem', { identity: 'webhook:app:guesser', code: fresh });
    expect(limited.status).toBe(400);
    expect(JSON.stringify(limited.json)).toMatch(/too many wrong codes/i);
    // The stranger and the guesser joined nothing: their prompts hold no one's markers.
    const seen = anthropic.requests.length;
    await webhook({ ...owner, webhookUser: 'guesser', markers: [] }, 'What do you know about me?');
    await webhook({ ...owner, webhookUser: 'stranger', markers: [] }, 'What do you know about me?');
    expect(markersIn(JSON.stringify(anthropic.requests.slice(seen).map((r) => ({ system: r.system, messages: r.messages }))), allMarkers)).toEqual([]);
    // No code is in any log line.
    const logged = logs.lines().join('\n');
    expect([code, second, fresh].filter((c) => logged.includes(c))).toEqual([]);
  }, 120_000);
});
