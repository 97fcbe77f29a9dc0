/**
 * The webhook channel over real HTTP on loopback, storing into a real SQLite store: good, forged,
 * unsigned, oversized, malformed and invalid requests, replies in the response or to a signed
 * callback, and one scope per source user.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, signRequest, verifyRequest } from '../../src/channels/webhook/signature';
import { startWebhookServer, type WebhookServer } from '../../src/channels/webhook/webhook-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const SECRET = 'webhook-secret-0123456789';

describe('webhook channel', () => {
  let core: Core;
  let server: WebhookServer;
  const logs = memoryLogger();

  beforeAll(async () => {
    core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), logs.logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    server = await startWebhookServer({
      secret: SECRET,
      nonces: core.webhookNonces,
      logger: logs.logger,
      maxBytes: 4_096,
      callbackRetryMs: 10,
      callbackHosts: ['127.0.0.1'],
      handler: async (message) => {
        await core.episodeService.ingestMany({ key: message.scopeKey, channel: 'webhook' }, [
          core.episodeService.normalize(
            { content: message.text, author: message.name ?? message.user, externalId: message.externalId, timestamp: message.timestamp.toISOString() },
            'webhook',
          ),
        ]);
        return `noted: ${message.text}`;
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await core?.close();
  });

  async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }
  const signed = (body: string, path = '/webhook/crm') => signRequest({ secret: SECRET, method: 'POST', path, body });
  const stored = async (key: string) => {
    const scope = await core.scopes.findByKey(key);
    return scope ? core.db.prisma.episode.count({ where: { scopeId: scope.id } }) : 0;
  };

  it('answers a signed request and stores the message in the source user\u2019s scope', async () => {
    const body = JSON.stringify({ user: 'u1', name: 'Ana', text: 'I moved to Porto', messageId: 'm1' });
    const { status, json } = await post('/webhook/crm', body, signed(body));
    expect(status).toBe(200);
    expect(json).toEqual({ reply: 'noted: I moved to Porto' });
    expect(await stored('webhook:crm:u1')).toBe(1);
    // A retried delivery of the same message is stored once.
    expect((await post('/webhook/crm', body, signed(body))).status).toBe(200);
    expect(await stored('webhook:crm:u1')).toBe(1);
    // Another user of the source has a scope of their own.
    const other = JSON.stringify({ user: 'u2', text: 'hello' });
    await post('/webhook/crm', other, signed(other));
    expect(await stored('webhook:crm:u2')).toBe(1);
    expect(await stored('webhook:crm:u1')).toBe(1);
  });

  it('refuses forged, unsigned, oversized, malformed and invalid requests, storing nothing', async () => {
    const body = JSON.stringify({ user: 'mallory', text: 'store that I am an admin' });
    expect((await post('/webhook/crm', body, { [SIGNATURE_HEADER]: sign(body, 'wrong-secret-xxxxxxxx') })).status).toBe(401);
    expect((await post('/webhook/crm', body)).status).toBe(401);
    expect((await post('/webhook/crm', body, { [SIGNATURE_HEADER]: sign(`${body} `, SECRET) })).status).toBe(401);
    const big = JSON.stringify({ user: 'mallory', text: 'x'.repeat(5_000) });
    expect((await post('/webhook/crm', big, signed(big))).status).toBe(413);
    const broken = '{"user": "mallory", "text": ';
    const bad = await post('/webhook/crm', broken, signed(broken));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/not valid JSON/);
    const invalid = JSON.stringify({ user: 'mallory', text: '', extra: 1 });
    const refused = await post('/webhook/crm', invalid, signed(invalid));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json.issues)).toMatch(/text/);
    expect((await fetch(`${server.url}/webhook/crm`, { method: 'POST', headers: { 'content-type': 'text/plain', ...signed(body) }, body })).status).toBe(415);
    expect((await fetch(`${server.url}/webhook/crm`)).status).toBe(405);
    expect((await post('/webhook/Bad Source', body, signed(body, '/webhook/Bad Source'))).status).toBe(404);
    expect(await core.scopes.findByKey('webhook:crm:mallory')).toBeNull();
    expect(logs.lines().join('\n')).not.toContain(SECRET);
  });

  it('sends the reply to a callback URL, signed', async () => {
    const received: Array<{ body: string; signature: string | undefined; timestamp: string | undefined; path: string | undefined }> = [];
    let failures = 1;
    const callback = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        if (failures-- > 0) {
          response.writeHead(502).end();
          return;
        }
        received.push({
          body: Buffer.concat(chunks).toString(),
          signature: request.headers[SIGNATURE_HEADER] as string | undefined,
          timestamp: request.headers[TIMESTAMP_HEADER] as string | undefined,
          path: request.url,
        });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    try {
      const body = JSON.stringify({
        user: 'u3',
        text: 'call me back',
        messageId: 'cb1',
        callbackUrl: `http://127.0.0.1:${(callback.address() as AddressInfo).port}/reply`,
      });
      const { status, json } = await post('/webhook/crm', body, signed(body));
      expect(status).toBe(202);
      expect(json).toEqual({ accepted: true });
      for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(received).toHaveLength(1);
      expect(JSON.parse(received[0]!.body)).toEqual({ scopeKey: 'webhook:crm:u3', messageId: 'cb1', reply: 'noted: call me back' });
      const { body: delivered, signature, timestamp, path } = received[0]!;
      expect(path).toBe('/reply');
      expect(verifyRequest({ secret: SECRET, method: 'POST', path: '/reply', body: Buffer.from(delivered), signature, timestamp })).toEqual(
        expect.objectContaining({ ok: true }),
      );
    } finally {
      await new Promise<void>((resolve) => callback.close(() => resolve()));
    }
  });
});
