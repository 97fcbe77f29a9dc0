/**
 * The composed service (src/service.ts) as `npm start` runs it, in process: one agent loop behind
 * every channel — Telegram against the loopback Bot API, the webhook over HTTP, the terminal over
 * streams — with the real Anthropic SDK against the loopback double, on a real SQLite store.
 * Each channel's messages land in their own scope and the model sees nothing of the others.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load-config';
import { signRequest } from '../../src/channels/webhook/signature';
import { startService, wantsTerminal, type RunningService } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText } from '../doubles/llm-script';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { freePort } from '../support/free-port';

const SECRET = 'service-webhook-secret-42';
const ANA = { id: 4242, first_name: 'Ana' };

describe('the service with every channel', () => {
  let double: AnthropicDouble;
  let telegram: FakeTelegramServer;
  let service: RunningService;
  let webhookPort: number;
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = '';
  const logs = memoryLogger();

  beforeAll(async () => {
    // A model that repeats what it was told, and says whether the rest of the prompt held anything of Ana's.
    double = await startAnthropicDouble({
      responder: (seen) => {
        const said = lastUserText(seen.messages);
        const rest = [seen.system ?? '', ...seen.messages.map((m) => m.text)].join('\n').replace(said, '');
        return { kind: 'text', text: `heard "${said}"${rest.includes('Kyoto') ? ' (I know about Kyoto)' : ''}` };
      },
    });
    telegram = await startFakeTelegram();
    webhookPort = await freePort();
    output.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const config = loadConfig({
      env: {
        DATA_DIR: tempDir(),
        ANTHROPIC_API_KEY: 'sk-ant-service-test-0000',
        ANTHROPIC_BASE_URL: double.url,
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(ANA.id),
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'on',
        TERMINAL_USER: 'bea',
        SLEEP_ENABLED: 'false',
      },
      envFile: false,
    });
    service = await startService(config, logs.logger, { input, output });
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await telegram?.close();
    await double?.stop();
  });

  it('answers Telegram through the agent and keeps the chat in its own scope', async () => {
    telegram.message(ANA, 'I am flying to Kyoto in May');
    const reply = await telegram.waitFor(() => telegram.sent(ANA.id).find((m) => m.text?.startsWith('heard')), 20_000, 'the reply');
    expect(reply.text).toBe('heard "I am flying to Kyoto in May"');
    const scope = await service.core.scopes.findByKey(`telegram:private:${ANA.id}`);
    const episodes = await service.core.db.prisma.episode.findMany({ where: { scopeId: scope!.id }, orderBy: { timestamp: 'asc' } });
    expect(episodes.map((e) => e.role)).toEqual(['user', 'agent']);
  });

  it('answers a signed webhook request through the agent, without Ana\u2019s memories', async () => {
    const body = JSON.stringify({ user: 'u7', text: 'where am I going?', messageId: 'w1' });
    const response = await fetch(`http://127.0.0.1:${webhookPort}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: SECRET, path: '/webhook/crm', body }) },
      body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ reply: 'heard "where am I going?"' });
    const forged = await fetch(`http://127.0.0.1:${webhookPort}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: 'not-the-secret-000000', path: '/webhook/crm', body }) },
      body,
    });
    expect(forged.status).toBe(401);
    expect(await service.core.scopes.findByKey('webhook:crm:u7')).not.toBeNull();
  });

  it('talks on the terminal in its own scope, and leaving it ends the service run', async () => {
    input.write('what do you know about me?\n');
    const deadline = Date.now() + 20_000;
    while (!printed.includes('heard "what do you know about me?"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(printed).toContain('heard "what do you know about me?"');
    expect(printed).not.toContain('Kyoto');
    const scope = await service.core.scopes.findByKey('terminal:bea');
    expect(await service.core.db.prisma.episode.count({ where: { scopeId: scope!.id } })).toBe(2);
    input.end();
    await expect(service.ended).resolves.toMatch(/terminal/);
  });

  it('never logs the secrets', () => {
    const text = logs.lines().join('\n');
    expect(text).toContain('Telegram bot started');
    for (const secret of [SECRET, telegram.token, 'sk-ant-service-test-0000']) expect(text).not.toContain(secret);
  });
});

describe('wantsTerminal', () => {
  const config = (env: Record<string, string>) => loadConfig({ env: { DATA_DIR: tempDir(), ...env }, envFile: false });
  it('opens the terminal by default only without a Telegram token and with a terminal on stdin', () => {
    expect(wantsTerminal(config({}), { isTTY: true })).toBe(true);
    expect(wantsTerminal(config({}), { isTTY: false })).toBe(false);
    expect(wantsTerminal(config({ TELEGRAM_BOT_TOKEN: '123:abcdefghijklmnopqrstuvwxyz012345' }), { isTTY: true })).toBe(false);
    expect(wantsTerminal(config({ TERMINAL: 'on' }), { isTTY: false })).toBe(true);
    expect(wantsTerminal(config({ TERMINAL: 'off' }), { isTTY: true })).toBe(false);
  });
});
