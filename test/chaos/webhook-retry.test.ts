/**
 * A caller retries a webhook message it got no answer to (a timeout, a dropped connection): the
 * retry is signed afresh and carries the same `messageId`. On the composed service (src/service.ts
 * as `npm start` builds it, the Anthropic SDK against the loopback double), the retry is answered
 * with the reply the message already got, whether it arrives after the first answer or while the
 * first is still being worked on; the model is asked once and the message is stored once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { signRequest } from '../../src/channels/webhook/signature';
import type { RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { startComposedService } from './composed-service';

const WEBHOOK_SECRET = 'whk-retry-0123456789abcdef';

describe('webhook retry of the same messageId (chaos)', () => {
  const logs = memoryLogger();
  const dataDir = tempDir('nocturne-chaos-webhook-retry-');
  let double: AnthropicDouble;
  let service: RunningService;
  let webhookBase: string;
  let answers = 0;

  const post = async (body: Record<string, unknown>) => {
    const raw = JSON.stringify(body);
    const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body: raw });
    const response = await fetch(`${webhookBase}/webhook/crm`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: `Answer number ${++answers}.` }) });
    ({ service, webhookBase } = await startComposedService({
      dataDir,
      logger: logs.logger,
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-webhook-retry', ANTHROPIC_BASE_URL: double.url, WEBHOOK_SECRET },
    }));
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const userTurns = async (key: string) => {
    const scope = await service.core.scopes.findByKey(key);
    return scope ? service.core.db.prisma.episode.count({ where: { scopeId: scope.id, role: 'user' } }) : 0;
  };

  it('a retry after the answer gets the same reply', async () => {
    const message = { user: 'ana', text: 'I moved to Porto last week', messageId: 'crm-1' };
    const first = await post(message);
    const retry = await post(message);
    process.stderr.write(`webhook-retry: first ${JSON.stringify(first)}, retry ${JSON.stringify(retry)}\n`);
    expect(first).toEqual({ status: 200, json: { reply: 'Answer number 1.' } });
    expect(retry).toEqual({ status: 200, json: { reply: 'Answer number 1.' } });
    expect(await userTurns('webhook:crm:ana')).toBe(1);
  }, 60_000);

  it('a retry while the first is being worked on gets the same reply, with one model call', async () => {
    const message = { user: 'ben', text: 'My sister Ines is visiting', messageId: 'crm-2' };
    const before = double.requests.length;
    const [first, retry] = await Promise.all([post(message), post(message)]);
    process.stderr.write(`webhook-retry: concurrent ${JSON.stringify(first)}, ${JSON.stringify(retry)}\n`);
    expect(first.status).toBe(200);
    expect(first.json.reply).toMatch(/^Answer number \d+\.$/);
    expect(retry).toEqual(first);
    expect(double.requests.length - before).toBe(1);
    expect(await userTurns('webhook:crm:ben')).toBe(1);
  }, 60_000);
});
