/**
 * Telegram webhook mode through `npm start` (main.ts as a child process) on SQLite, with the
 * loopback Bot API delivering updates to the webhook the service registered:
 * - start registers the webhook with the secret and the update types of polling mode;
 * - a request without the secret, or with a wrong one, is refused (401) and nothing is stored
 *   nor answered; a body that is not an update is refused (400), nothing stored;
 * - a message is answered once; the same update delivered again (twice at once, then later) is
 *   answered 200 and still answered once;
 * - the secret never reaches the logs; stopping does not delete the webhook.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import type { Update } from 'grammy/types';
import type { AnthropicDouble } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { openSqlite, scalar, type Entry } from '../chaos/crash-support';
import { tempDir } from '../support/databases';
import { freePort, startReplica, startTaggingModel, stopReplica, webhookEnv, WEBHOOK_SECRET } from './telegram-webhook-support';

const PERSON = { id: 5_550_001, first_name: 'Ada' };

describe('Telegram webhook mode (npm start, SQLite)', () => {
  let fake: FakeTelegramServer;
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let service: Entry;
  let route: string;
  let dbFile: string;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    model = await startTaggingModel();
    ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    const port = await freePort();
    route = `http://127.0.0.1:${port}/telegram`;
    const dataDir = path.join(tempDir('nocturne-tg-webhook-'), 'data');
    dbFile = path.join(dataDir, 'nocturne.db');
    service = await startReplica(
      webhookEnv({
        dataDir,
        port,
        apiRoot: fake.apiRoot,
        token: fake.token,
        modelUrl: model.url,
        ollamaUrl: ollama.url,
        allowedUsers: [PERSON.id],
        extra: { SLEEP_ENABLED: 'false' },
      }),
    );
    fake.routeWebhook([route]);
  }, 120_000);

  afterAll(async () => {
    if (service) await stopReplica(service);
    await fake?.close();
    await model?.stop();
    await ollama?.stop();
  });

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(route, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const storedUpdates = () => {
    const db = openSqlite(dbFile, { readonly: true });
    try {
      return scalar(db, 'SELECT COUNT(*) FROM TelegramUpdate');
    } finally {
      db.close();
    }
  };
  const replies = (tag: string) => fake.sent(PERSON.id).filter((m) => m.text?.startsWith(`re: ${tag}`)).length;

  it('registers the webhook with the secret and the update types of polling mode', () => {
    expect(fake.webhook()).toEqual({
      url: 'https://bot.example.com/telegram',
      secretToken: WEBHOOK_SECRET,
      allowedUpdates: ['message', 'edited_message', 'callback_query'],
      maxConnections: 40,
    });
    expect(fake.calls('setMyCommands')).toHaveLength(1);
    expect(fake.calls('deleteWebhook')).toHaveLength(0);
  });

  it('refuses a missing or wrong secret (401) and a body that is no update (400), storing and answering nothing', async () => {
    const update = {
      update_id: 900_001,
      message: {
        message_id: 1,
        date: Math.floor(Date.now() / 1000),
        chat: { id: PERSON.id, type: 'private', first_name: 'Ada' },
        from: { ...PERSON, is_bot: false },
        text: 'c0#99 forged',
      },
    };
    const missing = await post(update);
    const wrong = await post(update, { 'x-telegram-bot-api-secret-token': `${WEBHOOK_SECRET}x` });
    const almost = await post(update, { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET.slice(0, -1) });
    expect([missing.status, wrong.status, almost.status]).toEqual([401, 401, 401]);
    const notJson = await post('{"update_id": 5', { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET });
    const noId = await post({ message: update.message }, { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET });
    const badId = await post({ ...update, update_id: -3 }, { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET });
    expect([notJson.status, noId.status, badId.status]).toEqual([400, 400, 400]);
    const get = await fetch(route, { headers: { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET } });
    expect(get.status).toBe(405);
    await new Promise((r) => setTimeout(r, 300));
    expect(storedUpdates()).toBe(0);
    expect(fake.sent(PERSON.id)).toHaveLength(0);
  });

  it('answers a message once, however often its update is delivered', async () => {
    const update: Update = fake.message(PERSON, 'c0#1 hello there');
    await fake.waitFor(() => replies('c0#1') === 1, 30_000, 'the reply to c0#1');
    expect(
      fake
        .webhookDeliveries()
        .filter((d) => d.updateId === update.update_id)
        .map((d) => d.status),
    ).toEqual([200]);
    // Telegram (or a load balancer's retry) delivers it again: twice at once, then once more.
    const headers = { 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET };
    const again = await Promise.all([post(update, headers), post(update, headers)]);
    expect(again.map((r) => r.status)).toEqual([200, 200]);
    expect((await post(update, headers)).status).toBe(200);
    // A new message after them is answered, so everything before it has been handled.
    fake.message(PERSON, 'c0#2 and another thing');
    await fake.waitFor(() => replies('c0#2') === 1, 30_000, 'the reply to c0#2');
    await new Promise((r) => setTimeout(r, 500));
    expect(replies('c0#1')).toBe(1);
    expect(replies('c0#2')).toBe(1);
    expect(storedUpdates()).toBe(2);
  });

  it('keeps the secret out of the logs and leaves the webhook set when it stops', async () => {
    await stopReplica(service);
    expect(service.stderr()).toMatch(/stopped cleanly/);
    expect(service.stderr() + service.stdout()).not.toContain(WEBHOOK_SECRET);
    expect(fake.calls('deleteWebhook')).toHaveLength(0);
    expect(fake.webhook()?.url).toBe('https://bot.example.com/telegram');
  }, 30_000);
});
