/**
 * Webhook mode taking over updates a dead replica left half done, one case per point where it can
 * die: the service (in process, SQLite, the loopback Bot API) finds each update `processing` in
 * the database, exactly as the dead replica left it, and its sweep finishes it:
 * - the message stored, no reply yet: the reply is written now and sent once, the message not
 *   stored twice;
 * - the reply stored but not sent: that stored reply is sent, without a new model call;
 * - the reply sent and its sendMessage recorded: nothing is sent again.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Update } from 'grammy/types';
import { toInboundMessage } from '../../src/channels/telegram/inbound';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import type { AnthropicDouble } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { freePort, startTaggingModel, WEBHOOK_SECRET } from './telegram-webhook-support';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PERSON = { id: 6_660_001, first_name: 'Grace' };

describe('Telegram webhook: an update a dead replica left unfinished', () => {
  let fake: FakeTelegramServer;
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let service: RunningService;
  let nextUpdate = 500;
  let nextMessage = 900;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    model = await startTaggingModel();
    ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    const config = loadConfig({
      env: {
        DATA_DIR: tempDir('nocturne-tg-resume-'),
        TERMINAL: 'off',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(PERSON.id),
        TELEGRAM_MODE: 'webhook',
        TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram',
        TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
        WEBHOOK_PORT: String(await freePort()),
        ANTHROPIC_API_KEY: 'sk-ant-resume-test-0000000000',
        ANTHROPIC_BASE_URL: model.url,
        EMBEDDER: 'ollama',
        OLLAMA_HOST: ollama.url,
        SLEEP_ENABLED: 'false',
      },
      envFile: false,
    });
    service = await startService(config, memoryLogger().logger, { input: process.stdin, output: process.stdout });
    // The scope exists with its owner, as after any earlier message.
    fake.routeWebhook([`http://127.0.0.1:${config.telegram?.mode.kind === 'webhook' ? config.telegram.mode.port : 0}/telegram`]);
    fake.message(PERSON, 'c9#0 hello');
    await fake.waitFor(() => fake.sent(PERSON.id).some((m) => m.text?.startsWith('re: c9#0')), 30_000, 'the first reply');
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await model?.stop();
    await ollama?.stop();
  });

  /** An update of a message from PERSON, as Telegram would send it (not delivered). */
  function update(text: string): Update & { message: NonNullable<Update['message']> } {
    const message = {
      message_id: nextMessage++,
      date: Math.floor(Date.now() / 1000),
      chat: { id: PERSON.id, type: 'private' as const, first_name: PERSON.first_name },
      from: { ...PERSON, is_bot: false },
      text,
    };
    return { update_id: nextUpdate++, message };
  }

  const inbound = (u: ReturnType<typeof update>) => toInboundMessage(u.message, { key: `telegram:private:${PERSON.id}`, kind: 'private', title: '' })!;

  /** Leaves the update as a replica that died while handling it does: recorded, `processing`. */
  async function leftProcessing(u: Update, calls: Array<{ method: string; result: unknown }> = []): Promise<void> {
    const updates = service.core.telegramUpdates;
    expect(await updates.record({ updateId: u.update_id, chatKey: String(PERSON.id), payload: JSON.stringify(u) }, new Date(Date.now() - 5_000))).toBe(
      'recorded',
    );
    await updates.startAttempt(u.update_id);
    if (calls.length > 0) await updates.saveCalls(u.update_id, calls);
  }

  const sentWith = (tag: string) => fake.sent(PERSON.id).filter((m) => m.text?.includes(tag));
  const done = async (id: number) => (await service.core.db.prisma.telegramUpdate.findUnique({ where: { updateId: BigInt(id) } }))?.status === 'done';
  const userEpisodes = async (externalId: string) => service.core.db.prisma.episode.count({ where: { externalId, role: 'user' } });

  it('answers a message that was stored before the replica died, once, without storing it again', async () => {
    const u = update('c9#1 my sister lives in Lisbon');
    await service.agent.observe(inbound(u)); // stored, as by agent.handle before its model call
    await leftProcessing(u);
    await fake.waitFor(() => sentWith('c9#1').length > 0, 30_000, 'the reply to c9#1');
    await pause(1_000); // a second send would come within this
    expect(sentWith('c9#1').map((m) => m.text)).toEqual(['re: c9#1 Thanks, noted.']);
    expect(await done(u.update_id)).toBe(true);
    expect(await userEpisodes(`${PERSON.id}:${u.message.message_id}`)).toBe(1);
  });

  it('sends the reply that was stored but not sent, without asking the model again', async () => {
    const u = update('c9#2 I start a new job on Monday');
    const stored = await service.agent.handle(inbound(u)); // message and reply stored; the send never happened
    expect(stored.text).toBe('re: c9#2 Thanks, noted.');
    const modelCalls = model.requests.length;
    await leftProcessing(u);
    await fake.waitFor(() => sentWith('c9#2').length > 0, 30_000, 'the reply to c9#2');
    await pause(1_000); // a second send would come within this
    expect(sentWith('c9#2').map((m) => m.text)).toEqual(['re: c9#2 Thanks, noted.']);
    expect(model.requests.length).toBe(modelCalls);
    expect(await done(u.update_id)).toBe(true);
  });

  it('sends nothing again when the reply went out and was recorded', async () => {
    const u = update('c9#3 the cat is called Miso');
    const stored = await service.agent.handle(inbound(u));
    // What Telegram answered the dead replica's sendMessage (recorded before it died).
    const result = { message_id: 77_777, date: Math.floor(Date.now() / 1000), chat: { id: PERSON.id, type: 'private' }, text: stored.text };
    await leftProcessing(u, [{ method: 'sendMessage', result }]);
    const by = Date.now() + 20_000;
    while (!(await done(u.update_id)) && Date.now() < by) await new Promise((r) => setTimeout(r, 100));
    expect(await done(u.update_id)).toBe(true);
    expect(sentWith('c9#3')).toEqual([]);
    // The chat goes on as usual afterwards.
    fake.message(PERSON, 'c9#4 and one more');
    await fake.waitFor(() => sentWith('c9#4').length > 0, 30_000, 'the reply to c9#4');
    expect(sentWith('c9#3')).toEqual([]);
  });
});
