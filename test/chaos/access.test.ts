/**
 * Access and secrets (issue 8), on the composed service (src/service.ts, as `npm start` runs it:
 * the agent behind Telegram against the fake Bot API, the webhook channel and the admin API, the
 * Anthropic SDK against the loopback double), with every secret configured:
 *
 * - the admin API refuses every route of its own OpenAPI document (so a new route is covered by
 *   itself) without the token, with a wrong one, a prefix of it, the token plus a character,
 *   another scheme, another secret of the service...: 401, the same body, nothing changed; only
 *   /healthz and /readyz answer, and they hold no data;
 * - the webhook refuses unsigned and wrongly signed requests (another secret, another body, a cut
 *   signature, another algorithm's name): 401 and nothing stored, no model call;
 * - a stranger on Telegram (private chat, a group the owner is in, pressing buttons of the owner's
 *   messages) gets one refusal and nothing of theirs is stored or answered;
 * - a session where the person pastes the service's secrets into the chat, the model fails with
 *   401 and 500 answers that echo the API key (cut by the adapter's length limit at a random
 *   place), Telegram answers 502 and drops connections, a webhook callback cannot be reached,
 *   and the API and webhook are asked wrong things naming secrets: no secret (nor 8 consecutive
 *   random characters of one) appears in the logs, the HTTP answers, the bot's messages, the
 *   exports or the audit.
 *
 * Seeded: the seed is printed; CHAOS_SEED=<n> replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { exportScope } from '../../src/export/json-export';
import { renderMarkdownExport } from '../../src/export/markdown-export';
import { serializeScopeExport } from '../../src/export/scope-document';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets, registerSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { chaosSeed, createMarkerFactory, createRng, elapsed, freePort, markersIn, type Rng } from './chaos-support';

const ANA = { id: 4100, first_name: 'Ana' };
const STRANGER = { id: 6666, first_name: 'Mallory', username: 'mallory' };
const GROUP = { id: -4200, type: 'group' as const, title: 'Family' };
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomText(rng: Rng, length: number): string {
  return Array.from({ length }, () => rng.pick([...ALNUM])).join('');
}

/** A secret: a fixed-looking prefix and a random part (leaks are looked for in the random part). */
interface Secret {
  readonly name: string;
  readonly value: string;
  readonly random: string;
}

function makeSecrets(rng: Rng): Record<'anthropic' | 'telegram' | 'admin' | 'webhook', Secret> {
  const secret = (name: string, prefix: string, length: number): Secret => {
    const random = randomText(rng, length);
    return { name, value: `${prefix}${random}`, random };
  };
  const digits = String(100_000_000 + rng.int(800_000_000));
  return {
    anthropic: secret('ANTHROPIC_API_KEY', 'sk-ant-api03-', 40),
    telegram: secret('TELEGRAM_BOT_TOKEN', `${digits}:AA`, 33),
    admin: secret('ADMIN_TOKEN', 'adm-', 32),
    webhook: secret('WEBHOOK_SECRET', 'whk-', 32),
  };
}

/** Consecutive random characters of a secret that count as a leak (62^8: no chance match). */
const LEAK_WINDOW = 8;

/** Which secrets (or any {@link LEAK_WINDOW} consecutive characters of their random part) occur in `text`. */
function leaks(text: string, secrets: readonly Secret[]): string[] {
  const found: string[] = [];
  for (const s of secrets) {
    for (let i = 0; i + LEAK_WINDOW <= s.random.length; i++) {
      if (text.includes(s.random.slice(i, i + LEAK_WINDOW))) {
        found.push(`${s.name} (characters ${i}-${i + LEAK_WINDOW - 1} of its random part)`);
        break;
      }
    }
  }
  return found;
}

describe('access and secrets (chaos)', () => {
  const seed = chaosSeed('access');
  const rng = createRng(seed);
  const marker = createMarkerFactory(rng);
  const secrets = makeSecrets(rng);
  const all = Object.values(secrets);
  const logs = memoryLogger();
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-access-');
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  /** Every HTTP answer the tests received from the API and the webhook. */
  const answers: Array<{ what: string; status: number; text: string }> = [];
  const figures = { routes: 0, apiRefusals: 0, webhookRefusals: 0, strangerUpdates: 0, logLines: 0, checkedTexts: 0 };

  const api = async (method: string, path: string, options: { auth?: string | null; body?: unknown } = {}) => {
    const headers: Record<string, string> = {};
    if (options.auth !== null) headers.authorization = options.auth ?? `Bearer ${secrets.admin.value}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${apiBase}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    const text = await response.text();
    answers.push({ what: `${method} ${path}`, status: response.status, text });
    return { status: response.status, text };
  };

  /** Posts `body` to a source with the given authentication headers (default: signed as a sender does). */
  const webhookPost = async (source: string, body: string, auth?: Record<string, string>) => {
    const headers = auth ?? signRequest({ secret: secrets.webhook.value, path: `/webhook/${source}`, body });
    const response = await fetch(`${webhookBase}/webhook/${source}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await response.text();
    answers.push({ what: `webhook ${source}`, status: response.status, text });
    return { status: response.status, text };
  };

  /** Sends `text` as `from` and waits until the bot has sent something more to `chatId`. */
  const say = async (from: typeof ANA, text: string, chat?: typeof GROUP) => {
    const chatId = chat?.id ?? from.id;
    const before = fake.sent(chatId).length;
    // In a group the bot answers only when addressed (issue 17): the owner mentions it there.
    fake.message(from, chat ? `@${fake.botInfo.username} ${text}` : text, chat ? { chat } : {});
    await fake.waitFor(() => fake.sent(chatId).length > before, 20_000, `an answer to "${text}"`);
    return fake.sent(chatId).slice(before);
  };

  beforeAll(async () => {
    fake = await startFakeTelegram({ token: secrets.telegram.value });
    double = await startAnthropicDouble({
      apiKey: secrets.anthropic.value,
      responder: (seen) => {
        if (seen.system?.includes('memory consolidation system')) {
          // Learns what the person said, word for word (pasted secrets included).
          const episodes = [...(seen.messages.at(-1)?.text ?? '').matchAll(/^E(\d+) \S+ \S+ user(?: \(([^)]*)\))?[^:]*: (.*)$/gm)];
          return {
            kind: 'text',
            text: JSON.stringify({
              new: episodes.map((m) => ({
                category: 'fact',
                content: `${m[2] ?? 'The person'} said: ${m[3]}`,
                confidence: 0.9,
                source: 'stated',
                episodes: [`E${m[1]}`],
              })),
            }),
          };
        }
        return { kind: 'text', text: seen.tools.length > 0 ? 'Noted.' : '{}' };
      },
    });
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        ANTHROPIC_API_KEY: secrets.anthropic.value,
        ANTHROPIC_BASE_URL: double.url,
        TELEGRAM_BOT_TOKEN: secrets.telegram.value,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(ANA.id),
        TELEGRAM_GROUPS: 'true',
        ADMIN_TOKEN: secrets.admin.value,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET: secrets.webhook.value,
        WEBHOOK_CALLBACK_HOSTS: '127.0.0.1',
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
        SLEEP_ENABLED: 'false',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
      },
      envFile: false,
    });
    expect(config.secrets).toEqual(expect.arrayContaining(all.map((s) => s.value)));
    registerSecrets(config.secrets); // as main.ts does before anything else
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    apiBase = `http://127.0.0.1:${apiPort}`;
    webhookBase = `http://127.0.0.1:${webhookPort}`;
    // Something to protect: Ana's chat, her group, a memory.
    await say(ANA, `I keep my diary about ${marker()} here`);
    await say(ANA, `Our family trip goes to ${marker()}`, GROUP);
    const scope = (await service.core.scopes.findByKey(`telegram:private:${ANA.id}`))!;
    await service.core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId: scope.id, category: 'fact', content: 'Ana keeps a diary', confidence: 0.9 }, { by: 'owner', now: new Date() }),
    );
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(
      `access: seed ${seed}; API routes ${figures.routes}, refused API requests ${figures.apiRefusals}, refused webhook requests ${figures.webhookRefusals}, stranger updates ${figures.strangerUpdates}, log lines checked ${figures.logLines}, texts checked for secrets ${figures.checkedTexts}; ${elapsed(started)}`,
    );
  });

  it('refuses every admin API route of the OpenAPI document without the right token, and changes nothing', async () => {
    const prisma = service.core.db.prisma;
    const scope = (await service.core.scopes.findByKey(`telegram:private:${ANA.id}`))!;
    const memory = (await prisma.memory.findFirstOrThrow({ where: { scopeId: scope.id } })).id;
    const doc = JSON.parse((await api('GET', '/openapi.json')).text) as { paths: Record<string, Record<string, unknown>> };
    const routes: Array<[string, string]> = [['GET', '/openapi.json']];
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const method of Object.keys(operations).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))) {
        routes.push([method.toUpperCase(), template.replace('{id}', scope.id).replace('{mid}', memory)]);
      }
    }
    routes.push(['GET', '/no-such-route'], ['POST', `/scopes/${scope.id}/memories`]);
    figures.routes = routes.length;
    expect(routes.length).toBeGreaterThanOrEqual(12);
    expect(routes.map(([m, p]) => `${m} ${p}`)).toEqual(
      expect.arrayContaining([
        `DELETE /scopes/${scope.id}/memories/${memory}`,
        `DELETE /scopes/${scope.id}/memories`,
        `POST /scopes/${scope.id}/sleep`,
        'GET /metrics',
      ]),
    );

    const token = secrets.admin.value;
    const wrong = [
      null,
      `Bearer ${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token.slice(0, 16)}`,
      `Bearer ${token}x`,
      `Bearer  ${token} ${token}`,
      token,
      `Basic ${Buffer.from(`admin:${token}`).toString('base64')}`,
      `Token ${token}`,
      'Bearer ',
      `Bearer ${secrets.webhook.value}`,
      `Bearer ${secrets.anthropic.value}`,
    ];
    const before = {
      memories: await prisma.memory.count(),
      scopes: await prisma.scope.count(),
      runs: await prisma.sleepRun.count(),
      audit: await prisma.auditEvent.count(),
      requests: double.requests.length,
    };
    const open = new Set<string>();
    for (const [method, path] of routes) {
      const body = method === 'POST' ? { query: 'diary', dryRun: false } : undefined;
      for (const auth of wrong) {
        const answer = await api(method, `${path}${auth === null && rng.next() < 0.3 ? `?access_token=${token}` : ''}`, { auth, body });
        if (answer.status !== 401 && ['/healthz', '/readyz'].includes(path)) {
          open.add(path);
          continue;
        }
        figures.apiRefusals++;
        expect({ route: `${method} ${path}`, auth: auth?.slice(0, 10) ?? null, status: answer.status, body: answer.text }).toEqual({
          route: `${method} ${path}`,
          auth: auth?.slice(0, 10) ?? null,
          status: 401,
          body: '{"error":"missing or wrong bearer token"}',
        });
      }
    }
    // Only the health checks answer without the token, and they say nothing about the data: no scope
    // id or key (`telegram:private:…`), no stored text. Whether the bot is polling is not data
    // (/readyz reports it for the health check, issue 17).
    expect([...open].sort()).toEqual(['/healthz', '/readyz']);
    for (const path of open)
      expect((await api('GET', path, { auth: null })).text).not.toMatch(new RegExp(`${scope.id}|${scope.key}|${memory}|telegram:|diary`));
    expect({
      memories: await prisma.memory.count(),
      scopes: await prisma.scope.count(),
      runs: await prisma.sleepRun.count(),
      audit: await prisma.auditEvent.count(),
      requests: double.requests.length,
    }).toEqual(before);

    // With the token every enumerated route is reached (matched and let through: neither 401 nor
    // 404; a POST may refuse our guess of its body with a 400), so the paths above are real ones.
    for (const [method, path] of routes.filter(([m, p]) => m !== 'DELETE' && !p.includes('no-such') && !(m === 'POST' && p.endsWith('/memories')))) {
      const answer = await api(method, path, { body: method === 'POST' ? (path.endsWith('/sleep') ? { dryRun: true } : { query: 'diary' }) : undefined });
      expect({ route: `${method} ${path}`, status: [401, 404].includes(answer.status) ? answer.status : 'reached' }).toEqual({
        route: `${method} ${path}`,
        status: 'reached',
      });
    }
  }, 60_000);

  it('refuses unsigned and wrongly signed webhook requests and stores nothing of them', async () => {
    const prisma = service.core.db.prisma;
    const before = {
      scopes: await prisma.scope.count(),
      episodes: await prisma.episode.count(),
      requests: double.requests.length,
      calls: await prisma.llmCall.count(),
    };
    const markers: string[] = [];
    // Each variant gets the body and the path it is posted to, and gives the authentication headers.
    const signed = (body: string, path: string, secret = secrets.webhook.value) => signRequest({ secret, path, body });
    const withSignature = (headers: Record<string, string>, change: (signature: string) => string) => ({
      ...headers,
      [SIGNATURE_HEADER]: change(headers[SIGNATURE_HEADER]!),
    });
    const now = () => String(Date.now());
    const variants: Array<[string, (body: string, path: string) => Record<string, string>]> = [
      ['no signature', () => ({})],
      ['no signature, a timestamp', () => ({ [TIMESTAMP_HEADER]: now() })],
      ['empty', () => ({ [TIMESTAMP_HEADER]: now(), [SIGNATURE_HEADER]: '' })],
      ['signed with another secret', (b, p) => signed(b, p, `${secrets.webhook.value}x`)],
      ['signed with the admin token', (b, p) => signed(b, p, secrets.admin.value)],
      ['signature of another body', (b, p) => signed(`${b} `, p)],
      ['signed for another path', (b) => signed(b, '/webhook/elsewhere')],
      ['signed for another method', (b, p) => signRequest({ secret: secrets.webhook.value, method: 'PUT', path: p, body: b })],
      ['another timestamp than the signed one', (b, p) => ({ ...signed(b, p), [TIMESTAMP_HEADER]: String(Date.now() + 1_000) })],
      ['the old body-only signature', (b) => ({ [SIGNATURE_HEADER]: sign(b, secrets.webhook.value) })],
      ['cut signature', (b, p) => withSignature(signed(b, p), (s) => s.slice(0, 40))],
      ['sha1= prefix', (b, p) => withSignature(signed(b, p), (s) => s.replace('sha256=', 'sha1='))],
      ['bare hex', (b, p) => withSignature(signed(b, p), (s) => s.slice('sha256='.length))],
      ['upper-case hex', (b, p) => withSignature(signed(b, p), (s) => `sha256=${s.slice('sha256='.length).toUpperCase()}`)],
      ['the secret itself', () => ({ [TIMESTAMP_HEADER]: now(), [SIGNATURE_HEADER]: secrets.webhook.value })],
    ];
    for (const [name, signature] of variants) {
      for (const source of ['crm', rng.pick(['helpdesk', 'homeauto', 'x'])]) {
        const word = marker();
        markers.push(word);
        const body = JSON.stringify({ user: `intruder-${word}`, text: `remember ${word} forever`, messageId: word });
        const answer = await webhookPost(source, body, signature(body, `/webhook/${source}`));
        figures.webhookRefusals++;
        expect({ name, status: answer.status, reply: answer.text.includes('reply') }).toEqual({ name, status: 401, reply: false });
      }
    }
    expect({
      scopes: await prisma.scope.count(),
      episodes: await prisma.episode.count(),
      requests: double.requests.length,
      calls: await prisma.llmCall.count(),
    }).toEqual(before);
    const stored = JSON.stringify(await prisma.episode.findMany({ select: { content: true, externalId: true } }));
    expect(markersIn(stored, markers)).toEqual([]);
    // The right signature is accepted (the refusals above were about the signature).
    const body = JSON.stringify({ user: 'u1', text: 'hello there' });
    expect((await webhookPost('crm', body)).status).toBe(200);
  }, 60_000);

  it('refuses a stranger on Telegram once, answers nothing else and stores nothing of theirs', async () => {
    const prisma = service.core.db.prisma;
    const before = { scopes: await prisma.scope.count(), episodes: await prisma.episode.count(), requests: double.requests.length };
    const callsBefore = fake.calls().length;
    const words = [marker(), marker(), marker()];
    const anaMessage = fake.sent(ANA.id).at(-1)!;
    const updates = [
      () => fake.message(STRANGER, `hello, remember ${words[0]}`),
      () => fake.message(STRANGER, '/memories'),
      () => fake.message(STRANGER, '/export'),
      () => fake.message(STRANGER, '/forget 1'),
      () => fake.message(STRANGER, `/forget ${words[1]}`),
      () => fake.message(STRANGER, '/digest'),
      () => fake.message(STRANGER, '/sleep'),
      () => fake.message(STRANGER, '/why 1'),
      () => fake.media(STRANGER, { photo: [{ file_id: 'p', file_unique_id: 'p', width: 1, height: 1 }], caption: `look ${words[2]}` }),
      () => fake.message(STRANGER, '/memories', { chat: GROUP }),
      () => fake.message(STRANGER, `in the group: ${words[0]}`, { chat: GROUP }),
      () => fake.message(STRANGER, '/export', { chat: GROUP }),
      () => fake.press(STRANGER, anaMessage, 'mem:0:'),
      () => fake.press(STRANGER, anaMessage, 'fg:y:AAAAAAAAAAAA'),
    ];
    for (const update of rng.shuffle(updates)) {
      update();
      figures.strangerUpdates++;
    }
    // One chat's updates are handled in order: Ana's messages in her chat (where the stranger
    // pressed buttons) and in the group are answered after the stranger's updates there.
    const anaPrivate = await say(ANA, 'are you there?');
    const anaGroup = await say(ANA, 'and here?', GROUP);
    // The one refusal goes where the stranger was first heard: their chat, the group, or a button's alert.
    const refused = /can only talk with the people my owner has allowed/;
    const refusals = () =>
      fake
        .calls()
        .slice(callsBefore)
        .filter((c) => refused.test(String(c.payload.text ?? '')));
    await fake.waitFor(() => refusals().length > 0 || undefined, 10_000, 'the refusal');
    await new Promise((r) => setTimeout(r, 200));
    const sent = fake
      .calls()
      .slice(callsBefore)
      .filter((c) => ['sendMessage', 'sendDocument', 'editMessageText', 'editMessageReplyMarkup', 'answerCallbackQuery'].includes(c.method));
    const toAna = new Set([...anaPrivate, ...anaGroup].map((m) => m.text));
    const others = sent.filter((c) => !(c.method === 'sendMessage' && toAna.has(String(c.payload.text))));
    expect(refusals()).toHaveLength(1);
    const [refusal] = refusals();
    if (refusal!.method === 'sendMessage') expect([STRANGER.id, GROUP.id]).toContain(Number(refusal!.payload.chat_id));
    else expect(refusal!.method).toBe('answerCallbackQuery');
    // Apart from it, at most empty answers to the stranger's button presses.
    for (const c of others.filter((x) => x !== refusal))
      expect({ method: c.method, text: c.payload.text }).toEqual({ method: 'answerCallbackQuery', text: undefined });
    for (const c of others) expect(JSON.stringify(c.payload)).not.toMatch(/diary|trip|Noted/);
    expect({ scopes: await prisma.scope.count(), episodes: (await prisma.episode.count()) - 4, requests: double.requests.length - 2 }).toEqual(before);
    expect(await service.core.scopes.findByKey(`telegram:private:${STRANGER.id}`)).toBeNull();
    const stored = JSON.stringify(await prisma.episode.findMany({ select: { content: true } }));
    expect(markersIn(stored, words)).toEqual([]);
    for (const request of double.requests) expect(markersIn(JSON.stringify(request.body), words)).toEqual([]);
  }, 60_000);

  it('keeps every secret out of logs, errors, answers, the bot\u2019s messages, exports and the audit', async () => {
    const prisma = service.core.db.prisma;
    const scope = (await service.core.scopes.findByKey(`telegram:private:${ANA.id}`))!;
    // The person pastes the service's secrets into the chat (the model answers "Noted.").
    await say(ANA, `my anthropic key is ${secrets.anthropic.value} and the admin token is ${secrets.admin.value}`);
    await say(ANA, `webhook secret: ${secrets.webhook.value}, bot token ${secrets.telegram.value}`, GROUP);
    const hook = (text: string, extra: Record<string, unknown> = {}) => {
      const body = JSON.stringify({ user: 'u2', text, ...extra });
      return webhookPost('crm', body);
    };
    expect((await hook(`the key is ${secrets.anthropic.value}`)).status).toBe(200);
    // Sleep learns it word for word, and shows it in the digest.
    expect((await api('POST', `/scopes/${scope.id}/sleep`, { body: { dryRun: false } })).status).toBe(200);
    await say(ANA, '/memories');
    await say(ANA, '/digest');

    // The model fails, echoing the API key. The adapter cuts long error texts at 300 characters:
    // the key is put across the cut at every offset of a range (in random order).
    const echo = (status: number, pad: number) => ({
      kind: 'status' as const,
      status,
      message: `${'x'.repeat(pad)} invalid x-api-key ${secrets.anthropic.value} (request ${status})`,
    });
    const shortEcho = (status: number) => ({ kind: 'status' as const, status, message: `invalid x-api-key: ${secrets.anthropic.value}` });
    for (const pad of rng.shuffle(Array.from({ length: 16 }, (_, i) => 250 + i))) {
      double.script(echo(401, pad));
      const unavailable = await say(ANA, `are you still there? (${pad})`);
      expect(unavailable[0]!.text).toMatch(/language model is not answering/);
    }
    double.script(shortEcho(500), 3);
    expect((await hook('and now?')).status).toBe(200);
    double.script(echo(500, 270), 3);
    await say(ANA, 'one more message so sleep has work');
    double.script(shortEcho(401));
    const sleep = await api('POST', `/scopes/${scope.id}/sleep`, { body: { dryRun: false } });
    expect(sleep.status).toBeLessThan(600);
    double.script(echo(401, 262));
    await api('POST', `/scopes/${scope.id}/sleep`, { body: { dryRun: true } });
    double.reset(); // no scripted failure left for what follows

    // Telegram misbehaves while the bot answers.
    fake.fail('sendMessage', { kind: 'bad-gateway' }, { kind: 'drop' });
    await say(ANA, '/help');
    // A callback that cannot be reached, with credentials in its address (refused: a callback
    // URL may not carry them), and one with a secret in its query.
    const closed = await freePort();
    expect(
      (await hook('call me back', { callbackUrl: `http://hook:${secrets.webhook.value}@127.0.0.1:${closed}/cb?token=${secrets.admin.value}` })).status,
    ).toBe(400);
    expect((await hook('call me back', { callbackUrl: `http://127.0.0.1:${closed}/cb?token=${secrets.admin.value}` })).status).toBe(202);
    // Wrong requests naming secrets.
    await api('GET', `/scopes/${secrets.admin.value}/memories`);
    await api('GET', `/scopes/${scope.id}/memories/${secrets.anthropic.value}`);
    await api('POST', `/scopes/${scope.id}/search`, { body: { query: 'x', strategy: secrets.admin.value } });
    await api('GET', `/scopes/${scope.id}/episodes?since=${encodeURIComponent(secrets.webhook.value)}`);
    await api('GET', '/scopes', { auth: `Bearer ${secrets.anthropic.value}` });
    await hook('', { name: secrets.admin.value });
    await hook('hi', { timestamp: secrets.anthropic.value });
    await webhookPost(secrets.webhook.value.toLowerCase().replace(/[^a-z0-9]/g, ''), '{}', undefined);
    await say(ANA, '/export');
    await fake.waitFor(() => fake.sent(ANA.id).filter((m) => m.document).length >= 2 || undefined, 20_000, 'the export documents');
    // Every GET route of the API, for every scope (their answers are checked below).
    const doc = JSON.parse((await api('GET', '/openapi.json')).text) as { paths: Record<string, Record<string, unknown>> };
    for (const s of await prisma.scope.findMany()) {
      const memory = await prisma.memory.findFirst({ where: { scopeId: s.id } });
      for (const [template, operations] of Object.entries(doc.paths)) {
        if (!('get' in operations) || (template.includes('{mid}') && !memory)) continue;
        await api('GET', template.replace('{id}', s.id).replace('{mid}', memory?.id ?? ''));
      }
    }
    await new Promise((r) => setTimeout(r, 3_500)); // the callback's retries (1 s, 2 s) are logged

    const problems: string[] = [];
    const checkText = (where: string, text: string) => {
      figures.checkedTexts++;
      for (const leak of leaks(text, all)) problems.push(`${where}: ${leak}`);
    };
    for (const s of await prisma.scope.findMany()) {
      const doc = await exportScope(prisma, s.id);
      checkText(`JSON export of ${s.key}`, serializeScopeExport(doc));
      checkText(`Markdown export of ${s.key}`, [...renderMarkdownExport(doc, { defaultTimeZone: 'UTC' }).values()].join('\n'));
    }
    for (const e of await prisma.auditEvent.findMany()) checkText(`audit event ${e.action} ${e.subjectType}`, JSON.stringify(e));
    for (const c of await prisma.llmCall.findMany({ where: { error: { not: null } } })) checkText('LlmCall.error', c.error!);
    for (const r of await prisma.sleepRun.findMany()) checkText(`sleep run ${r.status}`, JSON.stringify(r));
    // So the checks can fail: the model did fail, and the person's words were learned.
    expect(await prisma.llmCall.count({ where: { status: 'error' } })).toBeGreaterThanOrEqual(16);
    expect(await prisma.episode.count({ where: { content: { contains: 'anthropic key is' } } })).toBeGreaterThanOrEqual(1);
    expect(await prisma.llmCall.count({ where: { purpose: 'consolidation', status: 'ok' } })).toBeGreaterThanOrEqual(1);
    // What was said there is only the secrets: no memory keeps it (a "... key is [REDACTED]" line says nothing).
    expect(await prisma.memory.count({ where: { content: { contains: 'anthropic key is' } } })).toBe(0);

    await service.stop(); // stopping logs too
    const lines = logs.lines();
    figures.logLines = lines.length;
    lines.forEach((line, i) => checkText(`log line ${i} ${line.slice(0, 160)}`, line));
    // Every answer, errors included. Not the routes that return stored messages as they were said
    // (episodes, search results, a memory's sources): the API shows the admin the raw store, and a
    // person's pasted secret is part of what they said (exports, logs and errors redact it).
    const rawMessages = /\/episodes|\/search|\/memories\/[^/?]+$/;
    for (const [i, a] of answers.entries())
      if (a.status >= 400 || !rawMessages.test(a.what)) checkText(`HTTP answer ${i} ${a.what} ${a.status} ${a.text.slice(0, 80)}`, a.text);
    for (const chatId of [ANA.id, GROUP.id, STRANGER.id]) {
      for (const m of fake.sent(chatId))
        checkText(
          `bot message to ${chatId} ${(m.text ?? m.caption ?? '').slice(0, 60)}`,
          `${m.text ?? ''}${m.caption ?? ''}${m.document?.content.toString('utf8') ?? ''}`,
        );
    }
    expect(lines.some((l) => /invalid x-api-key/.test(l))).toBe(true);
    expect(problems).toEqual([]);
  }, 90_000);
});
