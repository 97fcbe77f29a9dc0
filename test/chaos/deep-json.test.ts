/**
 * Hostile input, round three: JSON nested 200,000 levels deep (well inside every body limit as
 * `[[[...]]]`) sent to each HTTP door of `npm start` (src/main.ts as a child process): the
 * Telegram webhook with the right secret token (loopback Bot API double), the signed webhook
 * channel with a valid signature, and the admin API with its token. JSON.parse takes any depth,
 * but every recursive walk after it (JSON.stringify, validation) overflows the stack; each door
 * must answer 200 (the Telegram update acknowledged and dropped: a 500 makes Telegram deliver it
 * again forever) or 400, never 500, go on answering, and log none of the body.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { signRequest } from '../../src/channels/webhook/signature';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { freePort } from './chaos-support';
import type { Entry } from './crash-support';
import { startReplica, stopReplica, webhookEnv, WEBHOOK_SECRET as TELEGRAM_SECRET } from '../integration/telegram-webhook-support';

const DEPTH = 200_000;
const SIGNED_SECRET = 'whk-deep-json-0123456789abcdef';
const ADMIN_TOKEN = 'adm-deep-json-0123456789abcdef';
/** A marker inside the hostile bodies: it must never reach the logs. */
const MARKER = 'deep-json-marker-8d1f';

const deep = (depth: number, inner = `"${MARKER}"`) => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('hostile input, round three: JSON nested 200,000 deep at every HTTP door (chaos)', () => {
  const dataDir = tempDir('nocturne-chaos-deep-json-');
  let fake: FakeTelegramServer;
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let entry: Entry;
  let webhookBase: string;
  let apiBase: string;
  const figures: Record<string, number> = {};

  beforeAll(async () => {
    fake = await startFakeTelegram();
    model = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    const [webhookPort, apiPort] = [await freePort(), await freePort()];
    webhookBase = `http://127.0.0.1:${webhookPort}`;
    apiBase = `http://127.0.0.1:${apiPort}`;
    const env = webhookEnv({
      dataDir,
      port: webhookPort,
      apiRoot: fake.apiRoot,
      token: fake.token,
      modelUrl: model.url,
      ollamaUrl: ollama.url,
      allowedUsers: [4_242_001],
    });
    entry = await startReplica({ ...env, SLEEP_ENABLED: 'false', WEBHOOK_SECRET: SIGNED_SECRET, ADMIN_TOKEN, API_PORT: String(apiPort) });
  }, 120_000);

  afterAll(async () => {
    if (entry) await stopReplica(entry);
    await fake?.close();
    await model?.stop();
    await ollama?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`deep-json: ${JSON.stringify(figures)}`);
  });

  const healthy = async () => (await fetch(`${apiBase}/healthz`)).status;

  it('the Telegram webhook acknowledges a deep body with the right secret (200) and drops it; the service goes on', async () => {
    const bodies = {
      telegramDeepField: `{"update_id":900001,"message":${deep(DEPTH, '{}')}}`,
      telegramDeepArray: deep(DEPTH),
    };
    for (const [name, body] of Object.entries(bodies)) {
      const response = await fetch(`${webhookBase}/telegram`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': TELEGRAM_SECRET },
        body,
      });
      figures[name] = response.status;
      expect([200, 400]).toContain(response.status);
    }
    // The update with an update_id is acknowledged, so Telegram does not send it again.
    expect(figures.telegramDeepField).toBe(200);
    expect(entry.logged(/nested too deep to be a Telegram update was acknowledged and dropped/)).toBe(true);
    expect(await healthy()).toBe(200);
    expect(entry.running()).toBe(true);
  }, 60_000);

  it('the signed webhook channel answers a deep body with a valid signature 400, not 500', async () => {
    // The channel's body limit is 64 KiB: the deepest body it reads.
    for (const [name, body] of Object.entries({
      webhookDeepText: `{"user":"ann","text":${deep(30_000)}}`,
      webhookDeepExtra: `{"user":"ann","text":"hi","extra":${deep(30_000)}}`,
      webhookDeepArray: deep(30_000),
    })) {
      const headers = signRequest({ secret: SIGNED_SECRET, method: 'POST', path: '/webhook/crm', body });
      const response = await fetch(`${webhookBase}/webhook/crm`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      figures[name] = response.status;
      expect({ name, status: response.status }).toEqual({ name, status: 400 });
    }
    expect(await healthy()).toBe(200);
  }, 60_000);

  it('the admin API answers deep bodies 400 on every route that takes a body, not 500', async () => {
    // A scope to name: one message through the signed webhook.
    const body = JSON.stringify({ user: 'ann', text: 'I keep bees' });
    const sent = await fetch(`${webhookBase}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: SIGNED_SECRET, method: 'POST', path: '/webhook/crm', body }) },
      body,
    });
    expect(sent.status).toBe(200);
    const scope = encodeURIComponent('webhook:crm:ann');
    const routes: Array<[string, string, string]> = [
      ['apiSearch', 'POST', `/scopes/${scope}/search`],
      ['apiSettings', 'PATCH', `/scopes/${scope}/settings`],
      ['apiSleep', 'POST', `/scopes/${scope}/sleep`],
    ];
    for (const [name, method, path] of routes) {
      for (const body of [`{"query":${deep(DEPTH)}}`, `{"query":"tea","extra":${deep(DEPTH)}}`, deep(DEPTH)]) {
        const response = await fetch(`${apiBase}${path}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body,
        });
        figures[`${name}${body.startsWith('[') ? 'Array' : body.includes('extra') ? 'Extra' : 'Field'}`] = response.status;
        // 400 for the body; a body that validates (the deep part in a field the route ignores)
        // is answered as without it.
        expect({ name, status: response.status, ok: [200, 400].includes(response.status) }).toEqual({ name, status: response.status, ok: true });
      }
    }
    expect(await healthy()).toBe(200);
  }, 60_000);

  it('the service still runs, and logged none of the hostile bodies', () => {
    expect(entry.running()).toBe(true);
    expect(entry.stderr()).not.toContain(MARKER);
    expect(entry.stderr()).not.toContain('[[[[');
  });
});
