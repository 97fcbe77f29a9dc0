/**
 * Hostile input, round two (issue 16, items 3 and 4), on the composed service (src/service.ts, as
 * `npm start` runs it: the agent behind the webhook channel with the Anthropic SDK against the
 * loopback double, and the admin API):
 *
 * 3. a signed webhook request captured and posted again — three times at its own path, and at
 *    other sources' paths — is answered once: one stored turn, one model call, one reply; the
 *    copies are refused (401, the reason given) and create no scope. A timestamp more than five
 *    minutes old or ahead is refused; the old body-only signature is refused with a message naming
 *    the new scheme; a malformed percent-encoding in the path answers 400, not 500.
 * 4. numbers out of range on every admin API route that takes numbers (`limit=Infinity`,
 *    `offset=Infinity`, `minConfidence=1e400`, ...) answer 400 naming the parameter and the
 *    allowed range, never 500.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { SIGNATURE_HEADER, sign, signRequest } from '../../src/channels/webhook/signature';
import type { RunningService } from '../../src/service';
import { openDatabase } from '../../src/storage/database';
import { createWebhookNonceRepository } from '../../src/storage/webhook-nonce-repository';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { postgresAvailable, postgresDatabase, postgresSkipReason, sqliteDatabase, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { elapsed } from './chaos-support';
import { startComposedService } from './composed-service';

const WEBHOOK_SECRET = 'whk-hostile-0123456789abcdef';
const ADMIN_TOKEN = 'adm-hostile-0123456789abcdef';

describe('hostile input, round two: webhook replay and numbers (chaos)', () => {
  const logs = memoryLogger();
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-hostile-');
  let double: AnthropicDouble;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  const figures: Record<string, number | string> = {};

  /** Posts raw bytes with the given headers to the webhook channel. */
  const post = async (path: string, body: string, headers: Record<string, string>) => {
    const response = await fetch(`${webhookBase}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: response.status, text: await response.text() };
  };
  const episodesOf = async (key: string) => {
    const scope = await service.core.scopes.findByKey(key);
    return scope ? service.core.db.prisma.episode.count({ where: { scopeId: scope.id, role: 'user' } }) : 0;
  };
  const api = async (method: string, path: string, body?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${apiBase}${path}`, { method, headers, body });
    return { status: response.status, text: await response.text() };
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    ({ service, apiBase, webhookBase } = await startComposedService({
      dataDir,
      logger: logs.logger,
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-hostile', ANTHROPIC_BASE_URL: double.url, ADMIN_TOKEN, WEBHOOK_SECRET },
    }));
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`hostile-webhook: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('3: a captured request posted again, at its path or another source\u2019s, is answered once', async () => {
    const prisma = service.core.db.prisma;
    for (const withMessageId of [false, true]) {
      const user = withMessageId ? 'replay-b' : 'replay-a';
      const body = JSON.stringify({ user, text: `remember the blue door (${user})`, ...(withMessageId ? { messageId: `m-${user}` } : {}) });
      const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body });
      const before = { calls: double.requests.length, scopes: await prisma.scope.count() };
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await post('/webhook/crm', body, headers));
      for (const source of ['billing', 'hr']) answers.push(await post(`/webhook/${source}`, body, headers));
      const statuses = answers.map((a) => a.status);
      const replies = answers.filter((a) => a.text.includes('"reply"')).length;
      figures[`replay${withMessageId ? 'WithMessageId' : ''}`] =
        `statuses ${statuses.join(',')}; turns ${await episodesOf(`webhook:crm:${user}`)}; model calls ${double.requests.length - before.calls}; replies ${replies}; new scopes ${(await prisma.scope.count()) - before.scopes}`;
      expect({ statuses, turns: await episodesOf(`webhook:crm:${user}`), calls: double.requests.length - before.calls, replies }).toEqual({
        statuses: [200, 401, 401, 401, 401],
        turns: 1,
        calls: 1,
        replies: 1,
      });
      for (const refused of answers.slice(1)) expect(refused.text).toMatch(/already|replay|path/i);
      expect(await service.core.scopes.findByKey(`webhook:billing:${user}`)).toBeNull();
      expect(await service.core.scopes.findByKey(`webhook:hr:${user}`)).toBeNull();
      expect((await prisma.scope.count()) - before.scopes).toBe(1);
    }
  }, 60_000);

  it('3: copies of one request sent at the same moment: exactly one is answered', async () => {
    const body = JSON.stringify({ user: 'racer', text: 'only once, please' });
    const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body });
    const before = double.requests.length;
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/webhook/crm', body, headers)));
    const statuses = answers.map((a) => a.status).sort();
    figures.concurrentCopies = statuses.join(',');
    expect(statuses).toEqual([200, 401, 401, 401, 401, 401, 401, 401]);
    expect(await episodesOf('webhook:crm:racer')).toBe(1);
    expect(double.requests.length - before).toBe(1);
  }, 30_000);

  it('3: the nonce store (SQLite and PostgreSQL) takes a signature once, also from two at once, and prunes old ones', async () => {
    const providers = [
      { name: 'sqlite', database: sqliteDatabase() },
      ...(postgresAvailable() ? [{ name: 'postgres', database: await postgresDatabase() }] : []),
    ];
    // eslint-disable-next-line no-console
    if (!postgresAvailable()) console.log(`nonce store on PostgreSQL skipped: ${postgresSkipReason()}`);
    for (const { name, database } of providers) {
      const db = await openDatabase({ database, logger: logs.logger });
      try {
        const nonces = createWebhookNonceRepository(db.prisma);
        const t0 = new Date('2026-01-01T00:00:00Z');
        const at = (minutes: number) => new Date(t0.getTime() + minutes * 60_000);
        expect({ name, first: await nonces.claim('aa', t0, at(-10)), again: await nonces.claim('aa', at(1), at(-9)) }).toEqual({
          name,
          first: true,
          again: false,
        });
        const race = await Promise.all([nonces.claim('bb', at(2), at(-8)), nonces.claim('bb', at(2), at(-8))]);
        expect({ name, race: race.sort() }).toEqual({ name, race: [false, true] });
        // Ten minutes later, 'aa' is pruned (its timestamp can no longer be in the window).
        expect(await nonces.claim('cc', at(11), at(1))).toBe(true);
        expect({ name, left: (await db.prisma.webhookNonce.findMany({ orderBy: { signature: 'asc' } })).map((n) => n.signature) }).toEqual({
          name,
          left: ['bb', 'cc'],
        });
      } finally {
        await db.close();
      }
    }
  }, 60_000);

  it('3: a timestamp more than five minutes old or ahead is refused with the reason', async () => {
    const before = double.requests.length;
    for (const [what, offsetMs] of [
      ['stale', -6 * 60_000],
      ['ahead', 6 * 60_000],
    ] as const) {
      const body = JSON.stringify({ user: `clock-${what}`, text: 'a message from another time' });
      const answer = await post(
        '/webhook/crm',
        body,
        signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body, timestamp: Date.now() + offsetMs }),
      );
      expect({ what, status: answer.status }).toEqual({ what, status: 401 });
      expect(answer.text).toMatch(/timestamp/i);
      expect(answer.text).toMatch(/5 minutes/);
      expect(await service.core.scopes.findByKey(`webhook:crm:clock-${what}`)).toBeNull();
    }
    // Within the window (4 minutes either way) it is accepted.
    for (const offsetMs of [-4 * 60_000, 4 * 60_000]) {
      const body = JSON.stringify({ user: 'clock-ok', text: `within the window ${offsetMs}` });
      expect(
        (
          await post(
            '/webhook/crm',
            body,
            signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body, timestamp: Date.now() + offsetMs }),
          )
        ).status,
      ).toBe(200);
    }
    expect(double.requests.length - before).toBe(2);
  }, 30_000);

  it('3: the old body-only signature is refused with a message naming the new scheme', async () => {
    const body = JSON.stringify({ user: 'old-sender', text: 'signed the old way' });
    const answer = await post('/webhook/crm', body, { [SIGNATURE_HEADER]: sign(body, WEBHOOK_SECRET) });
    expect(answer.status).toBe(401);
    expect(answer.text).toMatch(/x-nocturne-timestamp/);
    expect(answer.text).toMatch(/timestamp\.method\.path\.body|timestamp \+ "\." \+ method/);
    expect(await service.core.scopes.findByKey('webhook:crm:old-sender')).toBeNull();
  });

  it('3: a malformed percent-encoding in the path answers 400 before anything else', async () => {
    const body = JSON.stringify({ text: 'x' });
    for (const path of ['/webhook/%E0%A4%A', '/webhook/%', '/webhook/%ZZ', '/webhook/%C0%80']) {
      const answer = await post(path, body, {});
      expect({ path, status: answer.status }).toEqual({ path, status: 400 });
      expect(answer.text).toMatch(/percent|encod/i);
    }
  });

  it('4: out-of-range numbers on every API route that takes numbers answer 400 naming the parameter and range', async () => {
    const body = JSON.stringify({ user: 'numbers', text: 'something to list' });
    expect((await post('/webhook/crm', body, signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body }))).status).toBe(200);
    const scope = (await service.core.scopes.findByKey('webhook:crm:numbers'))!;
    const bad = ['Infinity', '-Infinity', '1e400', '-1e400', 'NaN', '-1', '1.5', '9007199254740993', 'abc'];
    const cases: Array<{ route: string; param: string; range: [string, string]; values: string[] }> = [
      { route: 'memories', param: 'limit', range: ['1', '500'], values: [...bad, '0', '501'] },
      { route: 'memories', param: 'offset', range: ['0', '1000000'], values: [...bad, '1000001'] },
      { route: 'memories', param: 'minConfidence', range: ['0', '1'], values: ['Infinity', '-Infinity', '1e400', '-1e400', 'NaN', '-0.1', '1.01', 'abc'] },
      { route: 'episodes', param: 'limit', range: ['1', '500'], values: [...bad, '0', '501'] },
      { route: 'audit', param: 'limit', range: ['1', '500'], values: [...bad, '0', '501'] },
    ];
    const statuses: Record<string, number> = {};
    const wrong: string[] = [];
    let requests = 0;
    for (const { route, param, range, values } of cases) {
      for (const value of values) {
        const answer = await api('GET', `/scopes/${scope.id}/${route}?${param}=${encodeURIComponent(value)}`);
        requests++;
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (answer.status !== 400 || !answer.text.includes(param) || !range.every((bound) => answer.text.includes(bound)))
          wrong.push(`${route}?${param}=${value}: ${answer.status} ${answer.text.slice(0, 160)}`);
      }
      // In range, the route answers.
      expect((await api('GET', `/scopes/${scope.id}/${route}?${param}=${range[0]}`)).status).toBe(200);
      expect((await api('GET', `/scopes/${scope.id}/${route}?${param}=${range[1]}`)).status).toBe(200);
    }
    // The search body: JSON numbers that parse to Infinity, and out-of-range ones.
    for (const [param, value, range] of [
      ['limit', '1e400', ['1', '200']],
      ['limit', '0', ['1', '200']],
      ['minConfidence', '1e400', ['0', '1']],
      ['minSourceTrust', '-1e400', ['0', '1']],
      ['minConfidence', '2', ['0', '1']],
    ] as const) {
      const answer = await api('POST', `/scopes/${scope.id}/search`, `{"query":"something","${param}":${value}}`);
      requests++;
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      if (answer.status !== 400 || !answer.text.includes(param) || !range.every((bound) => answer.text.includes(bound)))
        wrong.push(`search ${param}: ${value}: ${answer.status} ${answer.text.slice(0, 160)}`);
    }
    figures.apiNumberRequests = requests;
    figures.apiStatuses = JSON.stringify(statuses);
    expect(wrong).toEqual([]);
  }, 60_000);
});
