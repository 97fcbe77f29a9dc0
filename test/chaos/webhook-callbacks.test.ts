/**
 * Hostile input, round three: a signed webhook request names where the reply goes (`callbackUrl`),
 * and the service must not become a way into the operator's network. On the composed service
 * (src/service.ts, as `npm start` runs it: the agent behind the webhook channel, the Anthropic SDK
 * against the loopback double), with a listener of the test's own standing in for an internal
 * service on 127.0.0.1:
 *
 * - WEBHOOK_CALLBACK_HOSTS unset: a callback to 127.0.0.1 is refused with a 400, nothing is
 *   stored, the model is not called and the listener never is;
 * - WEBHOOK_CALLBACK_HOSTS=127.0.0.1: that host works (the reply arrives, signed); other loopback,
 *   link-local (metadata) and private hosts, and `localhost`, are refused; a redirect from the
 *   allowed host to another listener is not followed; credentials in the URL are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { elapsed, freePort } from './chaos-support';
import { sleepMs, waitFor } from './crash-support';

const WEBHOOK_SECRET = 'whk-callbacks-0123456789abcdef';

/** A listener that records every request; `redirectTo` makes it answer 302 to that URL. */
async function listener(redirectTo?: string): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      hits.push(`${request.method} ${request.url} ${Buffer.concat(chunks).toString()}`);
      if (redirectTo) response.writeHead(302, { location: redirectTo }).end();
      else response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, hits, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function composed(dataDir: string, double: AnthropicDouble, hosts: string | undefined): Promise<{ service: RunningService; base: string }> {
  const port = await freePort();
  const config = loadConfig({
    env: {
      DATA_DIR: dataDir,
      TZ: 'UTC',
      ANTHROPIC_API_KEY: 'sk-ant-test-callbacks',
      ANTHROPIC_BASE_URL: double.url,
      WEBHOOK_SECRET,
      WEBHOOK_PORT: String(port),
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      LOG_FORMAT: 'json',
      ...(hosts !== undefined && { WEBHOOK_CALLBACK_HOSTS: hosts }),
    },
    envFile: false,
  });
  return {
    service: await startService(config, memoryLogger().logger, { input: new PassThrough(), output: new PassThrough() }),
    base: `http://127.0.0.1:${port}`,
  };
}

async function post(base: string, body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const text = JSON.stringify(body);
  const response = await fetch(`${base}/webhook/crm`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body: text }) },
    body: text,
  });
  return { status: response.status, text: await response.text() };
}

describe('hostile input, round three: webhook callbacks only to configured hosts (chaos)', () => {
  const started = performance.now();
  const dirs: string[] = [];
  const figures: Record<string, unknown> = {};
  let double: AnthropicDouble;
  let internal: Awaited<ReturnType<typeof listener>>;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    internal = await listener();
  });
  afterAll(async () => {
    await internal?.close();
    await double?.stop();
    clearRegisteredSecrets();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`webhook-callbacks: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('no WEBHOOK_CALLBACK_HOSTS: a callback to 127.0.0.1 is refused (400) and the listener is never called', async () => {
    const dir = tempDir('nocturne-chaos-callbacks-none-');
    dirs.push(dir);
    const { service, base } = await composed(dir, double, undefined);
    try {
      const calls = double.requests.length;
      const answer = await post(base, { user: 'mallory', text: 'fetch the admin API for me', callbackUrl: `http://127.0.0.1:${internal.port}/scopes` });
      await sleepMs(2_000); // time for a callback that should not happen
      const scope = await service.core.scopes.findByKey('webhook:crm:mallory');
      figures.unset = { status: answer.status, listenerHits: internal.hits.length, modelCalls: double.requests.length - calls, scopeCreated: scope !== null };
      expect(answer.status).toBe(400);
      expect(answer.text).toMatch(/WEBHOOK_CALLBACK_HOSTS is empty/);
      expect(internal.hits).toEqual([]);
      expect(double.requests.length - calls).toBe(0);
      expect(scope).toBeNull();
    } finally {
      await service.stop();
    }
  }, 90_000);

  it('WEBHOOK_CALLBACK_HOSTS=127.0.0.1: that host is called back; other internal hosts, a redirect and credentials are not', async () => {
    const dir = tempDir('nocturne-chaos-callbacks-listed-');
    dirs.push(dir);
    const elsewhere = await listener();
    const redirecting = await listener(`http://127.0.0.1:${elsewhere.port}/stolen`);
    const { service, base } = await composed(dir, double, '127.0.0.1');
    try {
      const refused: Record<string, number> = {};
      for (const url of [
        `http://localhost:${elsewhere.port}/cb`,
        `http://127.0.0.2:${elsewhere.port}/cb`,
        `http://[::1]:${elsewhere.port}/cb`,
        `http://[::ffff:127.0.0.1]:${elsewhere.port}/cb`,
        'http://169.254.169.254/latest/meta-data/',
        'http://10.0.0.1/cb',
        `http://user:pw@127.0.0.1:${elsewhere.port}/cb`,
      ])
        refused[url] = (await post(base, { user: 'mallory', text: 'call back elsewhere', callbackUrl: url })).status;

      const ok = await post(base, { user: 'ana', text: 'call me back', messageId: 'cb1', callbackUrl: `http://127.0.0.1:${internal.port}/reply` });
      expect(await waitFor(() => internal.hits.length > 0, { timeoutMs: 30_000, intervalMs: 50 })).toBe(true);
      const redirected = await post(base, {
        user: 'ana',
        text: 'and via a redirect',
        messageId: 'cb2',
        callbackUrl: `http://127.0.0.1:${redirecting.port}/hop`,
      });
      expect(await waitFor(() => redirecting.hits.length > 0, { timeoutMs: 30_000, intervalMs: 50 })).toBe(true);
      await sleepMs(2_000); // time for a redirect that should not be followed
      figures.listed = { refused, allowed: ok.status, delivered: internal.hits.length, redirect: redirected.status, redirectFollowed: elsewhere.hits.length };
      expect(Object.values(refused)).toEqual(Object.keys(refused).map(() => 400));
      expect(ok.status).toBe(202);
      expect(internal.hits).toEqual([`POST /reply ${JSON.stringify({ scopeKey: 'webhook:crm:ana', messageId: 'cb1', reply: 'Noted.' })}`]);
      expect(redirected.status).toBe(202);
      expect(elsewhere.hits).toEqual([]);
      expect(await service.core.scopes.findByKey('webhook:crm:mallory')).toBeNull();
    } finally {
      await service.stop();
      await elsewhere.close();
      await redirecting.close();
    }
  }, 120_000);
});
