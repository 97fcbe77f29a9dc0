/**
 * Hostile input, round three: secrets. The composed service (src/service.ts, as `npm start` runs
 * it: the agent behind the Telegram bot (grammY against the loopback Bot API) and the signed
 * webhook, the admin API, the Anthropic SDK against the loopback double that records every
 * request body) is sent messages pasting one fake credential of every kind (test/support/
 * secret-corpus.ts: GitHub, AWS, Slack, Stripe, Google, PEM, JWT, `password=`, `sk-` keys glued to
 * other text or behind `%3D`, keys with zero-width spaces or soft hyphens inside, URL passwords
 * with `/` or `@`) and the service's own ADMIN_TOKEN, webhook secret, bot token, Anthropic key and
 * encryption key, on both channels. Then:
 *
 * - every prompt the model provider received (replies, and the sleep consolidation of both
 *   scopes) shows 0 characters of any of them;
 * - every output of the stored messages (admin API episodes, search, JSON and Markdown export)
 *   and the log, given each paste as a message and as a field, shows 0 characters of them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { AppError } from '../../src/shared/errors';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { charactersShown, ownSecrets, secretCorpus } from '../support/secret-corpus';
import { chaosSeed, elapsed, freePort } from './chaos-support';

const ANA: FakeUser = { id: 4242, first_name: 'Ana' };
const WEBHOOK_USER = 'ana';
const REPLY_TIMEOUT_MS = 30_000;

/** Every string of a request body, joined: what left the process for the provider. */
function bodyText(request: SeenLlmRequest): string {
  const strings: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') strings.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(request.body);
  return strings.join('\n');
}

describe('hostile input, round three: secrets (chaos)', () => {
  const seed = chaosSeed('secret-leaks');
  const corpus = secretCorpus(seed);
  const own = ownSecrets(seed);
  const ownCases = [
    { kind: 'own ADMIN_TOKEN', pasted: `the admin token is ${own.adminToken}`, needle: own.adminToken },
    { kind: 'own WEBHOOK_SECRET', pasted: `webhook secret: ${own.webhookSecret}`, needle: own.webhookSecret },
    { kind: 'own TELEGRAM_BOT_TOKEN', pasted: `bot ${own.botToken}`, needle: own.botToken },
    { kind: 'own ANTHROPIC_API_KEY', pasted: `the model key ${own.anthropicKey} is here`, needle: own.anthropicKey },
    { kind: 'own DATABASE_ENCRYPTION_KEY', pasted: `db key ${own.encryptionKey}`, needle: own.encryptionKey },
  ];
  const cases = [...corpus, ...ownCases];
  const logs = memoryLogger();
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-secrets-');
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  const figures: Record<string, number | string> = {};

  const api = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${own.adminToken}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${apiBase}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    expect({ path, status: response.status }).toEqual({ path, status: 200 });
    return text;
  };

  /** `{kind: characters shown}` for the cases that show any in `output`. */
  const shownIn = (output: string): Record<string, string> =>
    Object.fromEntries(
      cases.flatMap((c) => {
        const shown = charactersShown(c.needle, output);
        return shown > 0 ? [[c.kind, `${shown} of ${c.needle.length}`]] : [];
      }),
    );

  beforeAll(async () => {
    double = await startAnthropicDouble({
      responder: (seen) => (seen.tools.length > 0 ? { kind: 'text', text: 'Noted, thank you.' } : { kind: 'text', text: '{}' }),
    });
    fake = await startFakeTelegram({ token: own.botToken });
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: own.anthropicKey,
        ANTHROPIC_BASE_URL: double.url,
        DATABASE_ENCRYPTION_KEY: own.encryptionKey,
        TELEGRAM_BOT_TOKEN: own.botToken,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(ANA.id),
        ADMIN_TOKEN: own.adminToken,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET: own.webhookSecret,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
        SLEEP_ENABLED: 'false',
        LOG_FORMAT: 'json',
      },
      envFile: false,
    });
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    apiBase = `http://127.0.0.1:${apiPort}`;
    webhookBase = `http://127.0.0.1:${webhookPort}`;

    // Every paste on both channels, each answered before the next.
    for (const c of cases) {
      const body = JSON.stringify({ user: WEBHOOK_USER, text: c.pasted });
      const answer = await fetch(`${webhookBase}/webhook/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signRequest({ secret: own.webhookSecret, method: 'POST', path: '/webhook/chat', body }) },
        body,
      });
      expect({ kind: c.kind, status: answer.status }).toEqual({ kind: c.kind, status: 200 });
      const before = fake.sent(ANA.id).length;
      fake.message(ANA, c.pasted);
      await fake.waitFor(() => fake.sent(ANA.id).length > before, REPLY_TIMEOUT_MS, `the reply to ${c.kind}`);
    }
    figures.replyPrompts = double.requests.length;
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`secret-leaks: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('no prompt sent to the model provider, for replies or for sleep, shows any pasted or own secret', async () => {
    for (const key of [`webhook:chat:${WEBHOOK_USER}`, `telegram:private:${ANA.id}`]) {
      const scope = await service.core.scopes.findByKey(key);
      expect({ key, found: scope !== null }).toEqual({ key, found: true });
      await api('POST', `/scopes/${scope!.id}/sleep`, {});
    }
    const requests = double.requests;
    const leaking = requests.map((request, i) => ({ i, shown: shownIn(bodyText(request)) })).filter((r) => Object.keys(r.shown).length > 0);
    const replies = requests.filter((r) => r.tools.length > 0).length;
    figures.prompts = `${requests.length} (${replies} reply, ${requests.length - replies} sleep)`;
    figures.leakingPrompts = leaking.length;
    figures.leakedKinds = [...new Set(leaking.flatMap((r) => Object.keys(r.shown)))].length;
    expect(requests.length).toBeGreaterThan(cases.length);
    expect(requests.length - replies).toBeGreaterThan(0);
    expect(leaking.slice(0, 3)).toEqual([]);
    expect(leaking.length).toBe(0);
  }, 120_000);

  it('no output of the stored messages (episodes, search, exports) and no log line shows any of them', async () => {
    const outputs: Record<string, string> = {};
    for (const key of [`webhook:chat:${WEBHOOK_USER}`, `telegram:private:${ANA.id}`]) {
      const scope = (await service.core.scopes.findByKey(key))!;
      // Stored as written: the filter is on the way out.
      const stored = (await service.core.db.prisma.episode.findMany({ where: { scopeId: scope.id } })).map((e) => e.content).join('\n');
      expect(charactersShown(own.adminToken, stored)).toBe(own.adminToken.length);
      outputs[`${key} episodes`] = await api('GET', `/scopes/${scope.id}/episodes?limit=500`);
      outputs[`${key} search`] = [
        await api('POST', `/scopes/${scope.id}/search`, { query: 'token key password secret', strategy: 'keyword', limit: 200 }),
        await api('POST', `/scopes/${scope.id}/search`, { query: 'the bot uses', limit: 200 }),
      ].join('\n');
      outputs[`${key} json export`] = await api('GET', `/scopes/${scope.id}/export?format=json`);
      outputs[`${key} markdown export`] = await api('GET', `/scopes/${scope.id}/export?format=markdown`);
    }
    const log = service.core.logger.child({ component: 'secrets-test' });
    for (const c of cases) {
      log.warn(`a message arrived: ${c.pasted}`, {
        text: c.pasted,
        error: new AppError(`could not handle ${c.pasted}`, { code: 'test.secret', category: 'user' }),
      });
    }
    outputs.log = logs.lines().join('\n');
    const found: Record<string, Record<string, string>> = {};
    for (const [where, text] of Object.entries(outputs)) {
      const shown = shownIn(text);
      if (Object.keys(shown).length > 0) found[where] = shown;
    }
    figures.outputsLeaking = `${Object.keys(found).length} of ${Object.keys(outputs).length}`;
    figures.kindsShownInOutputs = [...new Set(Object.values(found).flatMap((s) => Object.keys(s)))].length;
    expect(found).toEqual({});
  }, 120_000);
});
