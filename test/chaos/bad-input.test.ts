/**
 * Bad input (issue 8): every way a message enters Nocturne — the episode service (what channels
 * and the importer call), the webhook channel and the admin API of the composed service (as
 * `npm start` runs it), `npm run cli -- import`, and the Telegram token at start — is fed empty,
 * whitespace-only, oversized, control characters, NUL, lone surrogates, byte order marks, CRLF,
 * decomposed accents, malformed JSON, wrong signatures and tokens, and a 10 MB (and a 40 MB)
 * JSONL line. Each is refused with a clear error or stored normalized; nothing crashes; and
 * afterwards every stored text (episodes, tags, scopes, metadata) is read back, as text and as
 * raw bytes: NFC, no NUL or control characters, well-formed UTF-16 / valid UTF-8.
 *
 * Seeded: 300 random messages are built from hostile fragments; CHAOS_SEED=<n> replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { normalizeText } from '../../src/memory/episodes/normalize';
import { startService, type RunningService } from '../../src/service';
import { ValidationError } from '../../src/shared/errors';
import { clearRegisteredSecrets, registerSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { chaosSeed, createRng, elapsed, freePort, type Rng } from './chaos-support';
import { startCli, startEntry, watchPeakMemory } from './crash-support';

const ADMIN_TOKEN = 'adm-bad-input-0123456789abcdef';
const WEBHOOK_SECRET = 'whk-bad-input-0123456789abcdef';
const MAX_BYTES = 4 * 1024 * 1024;

/** Characters no stored text may hold: C0 controls but tab and newline, DEL, C1 controls, BOM. */
const FORBIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\uFEFF]/;

/** Hostile pieces a random message is made of. */
const FRAGMENTS = [
  'hello',
  'Ana',
  ' ',
  '  \t ',
  '\n',
  '\r\n',
  '\r',
  '\u0000',
  '\u0000\u0000',
  '\u0007',
  '\u001B[31m',
  '\u007F',
  '\u0085',
  '\u009F',
  '\uFEFF',
  '\uD800',
  '\uDFFF',
  '\uDBFF\uDC00',
  '\uDC00\uD800',
  'cafe\u0301',
  'e\u0301\u0301',
  '\u200B',
  '\u202E',
  '👩‍👩‍👧',
  'שלום',
  'مرحبا',
  '中文',
  '𝔘𝔫𝔦',
  '{"json": "inside"}',
  '\'; DROP TABLE "Episode"; --',
  '%s%n',
  '\\u0000',
  '\\',
  '"',
  '',
];

function randomText(rng: Rng, pieces: number): string {
  return Array.from({ length: pieces }, () => rng.pick(FRAGMENTS)).join('');
}

/** Every problem with one stored text: forbidden characters, broken UTF-16, not NFC, not trimmed. */
function textProblems(where: string, text: string | null | undefined): string[] {
  if (text === null || text === undefined) return [];
  const problems: string[] = [];
  if (FORBIDDEN.test(text)) problems.push(`${where}: holds a control character, NUL or BOM (${JSON.stringify(text.slice(0, 60))})`);
  if (!text.isWellFormed()) problems.push(`${where}: is not well-formed UTF-16`);
  else if (text !== text.normalize('NFC')) problems.push(`${where}: is not NFC`);
  if (text !== text.trim()) problems.push(`${where}: has surrounding whitespace`);
  return problems;
}

function jsonStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const inner of value) jsonStrings(inner, out);
  else if (value !== null && typeof value === 'object') for (const [key, inner] of Object.entries(value)) out.push(key), jsonStrings(inner, out);
  return out;
}

/**
 * Reads every stored text of a SQLite store, as strings and as raw bytes (CAST AS BLOB: invalid
 * UTF-8 would show here even where a driver would paper over it), and lists every problem.
 */
function scanStore(file: string): { episodes: number; problems: string[] } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const problems: string[] = [];
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const columns: Array<[table: string, column: string, json?: boolean]> = [
      ['Episode', 'content'],
      ['Episode', 'author'],
      ['Episode', 'channel'],
      ['Episode', 'conversationId'],
      ['Episode', 'externalId'],
      ['Episode', 'summary'],
      ['Episode', 'metadata', true],
      ['EpisodeTag', 'value'],
      ['Scope', 'key'],
      ['Scope', 'channel'],
      ['Scope', 'title'],
    ];
    for (const [table, column, json] of columns) {
      const rows = db.prepare(`SELECT rowid AS r, CAST("${column}" AS BLOB) AS raw FROM "${table}" WHERE "${column}" IS NOT NULL`).all() as Array<{
        r: number;
        raw: Buffer;
      }>;
      for (const row of rows) {
        let text: string;
        try {
          text = decoder.decode(row.raw);
        } catch {
          problems.push(`${table}.${column} row ${row.r}: not valid UTF-8`);
          continue;
        }
        if (json) {
          for (const inner of jsonStrings(JSON.parse(text))) problems.push(...textProblems(`${table}.${column} row ${row.r} (in the JSON)`, inner));
        } else {
          // Content keeps newlines and tabs inside; every other text is one clean value too.
          problems.push(...textProblems(`${table}.${column} row ${row.r}`, text));
        }
      }
    }
    const episodes = (db.prepare('SELECT COUNT(*) AS n FROM Episode').get() as { n: number }).n;
    return { episodes, problems };
  } finally {
    db.close();
  }
}

describe('bad input (chaos)', () => {
  const seed = chaosSeed('bad-input');
  const rng = createRng(seed);
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-bad-input-');
  const logs = memoryLogger();
  let llm: AnthropicDouble;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  const figures = { serviceInputs: 0, refused: 0, stored: 0, webhookRequests: 0, apiRequests: 0, importLines: 0 };

  beforeAll(async () => {
    llm = await startAnthropicDouble({ responder: (seen) => ({ kind: 'text', text: seen.tools.length > 0 ? 'Noted.' : '{}' }) });
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        ANTHROPIC_API_KEY: 'sk-bad-input-0000',
        ANTHROPIC_BASE_URL: llm.url,
        ADMIN_TOKEN,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
        SLEEP_ENABLED: 'false',
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        EPISODE_MAX_BYTES: String(MAX_BYTES),
      },
      envFile: false,
    });
    registerSecrets(config.secrets);
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    apiBase = `http://127.0.0.1:${apiPort}`;
    webhookBase = `http://127.0.0.1:${webhookPort}`;
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await llm?.stop();
    clearRegisteredSecrets();
    // eslint-disable-next-line no-console
    console.log(
      `bad input: seed ${seed}; episode service inputs ${figures.serviceInputs} (stored ${figures.stored}, refused ${figures.refused}), webhook requests ${figures.webhookRequests}, API requests ${figures.apiRequests}, import lines ${figures.importLines}; ${elapsed(started)}`,
    );
  });

  const dbFile = () => path.join(dataDir, 'nocturne.db');

  it('the episode service stores 300 hostile messages normalized or refuses them with a clear ValidationError; nothing else is thrown', async () => {
    const episodes = service.core.episodeService;
    const scope = { key: 'bad:service', channel: 'test' };
    const fixed: Array<[unknown, RegExp | null]> = [
      [{ content: '' }, /content is empty/],
      [{ content: '   \t\n  \r\n ' }, /content is empty/],
      [{ content: '\u0000\u0001\u0007\u007F\u009F\uFEFF  ' }, /content is empty/],
      [{ content: 'x'.repeat(MAX_BYTES + 1) }, /content is 4\.0 MiB; the limit is 4\.0 MiB \(EPISODE_MAX_BYTES\)/],
      [{ content: 'é'.repeat(MAX_BYTES / 2 + 1) }, /the limit is 4\.0 MiB \(EPISODE_MAX_BYTES\)/],
      [{ content: 'x'.repeat(MAX_BYTES * 3) }, /content is 12\.0 MiB; the limit is 4\.0 MiB \(EPISODE_MAX_BYTES\)/],
      [null, /must be a JSON object/],
      [['content'], /must be a JSON object/],
      ['just a string', /must be a JSON object/],
      [{ content: 42 }, /content is required and must be a string/],
      [{ content: 'ok', timestamp: 'yesterday' }, /timestamp must be an ISO 8601 date-time/],
      [{ content: 'ok', role: 'root' }, /role/],
      [{ content: 'ok', channel: '\u0000\u0001' }, /channel is empty/],
      [{ content: 'ok', metadata: { importance: 7 } }, /importance/],
      [{ content: 'ok', metadata: { blob: 'x'.repeat(70_000) } }, /metadata is larger than 64\.0 KiB/],
      [
        {
          content: 'NUL\u0000 inside, lone \uD800 surrogate, BOM \uFEFF, escape \u001B[31m, cafe\u0301\r\nnext line',
          author: 'A\u0000na\u0007',
          externalId: 'id\u0000-1',
          conversationId: 'c\u00001',
          channel: 'te\u0000st',
          metadata: { topics: ['T\u0000ea', '\uD800'], entities: ['B\u0007ea'], note: { 'k\u0000': ['v\u0000', '\uDC00'] } },
        },
        null,
      ],
      [{ content: '\uFEFFbom first', externalId: 'bom' }, null],
    ];
    let refused = 0;
    let stored = 0;
    const attempt = async (input: unknown, expected: RegExp | null | undefined) => {
      try {
        const result = await episodes.ingest(scope, input);
        stored += 1;
        if (expected) throw new Error(`accepted ${JSON.stringify(input).slice(0, 80)}; expected ${expected}`);
        // Stored exactly as normalized (a duplicate external id returns the episode stored first).
        if (!result.duplicate) expect(result.episode?.content).toBe(normalizeText((input as { content: string }).content));
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        refused += 1;
        expect(error.message.length).toBeGreaterThan(10);
        if (expected) expect(error.message).toMatch(expected);
        else if (expected === null) throw error;
        // Refused only for a reason the input really has.
        else expect(error.code).toMatch(/^episode\.(empty|too_large|invalid)$/);
      }
    };
    for (const [input, expected] of fixed) await attempt(input, expected);
    // Random messages: hostile content and fields; each stored normalized, or refused as empty.
    for (let i = 0; i < 300; i++) {
      const input = {
        content: randomText(rng, 1 + rng.int(8)),
        ...(rng.next() < 0.5 ? { author: randomText(rng, 1 + rng.int(3)) } : {}),
        ...(rng.next() < 0.3 ? { conversationId: `c${rng.int(4)}${randomText(rng, 1)}` } : {}),
        ...(rng.next() < 0.5 ? { externalId: `r${i}${randomText(rng, 2)}` } : {}),
        ...(rng.next() < 0.4
          ? { metadata: { topics: [randomText(rng, 2)], entities: [randomText(rng, 2)], [randomText(rng, 1) || 'k']: randomText(rng, 3) } }
          : {}),
      };
      await attempt(input, undefined);
    }
    figures.serviceInputs = fixed.length + 300;
    figures.refused = refused;
    figures.stored = stored;
    expect(stored).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(fixed.length - 3);
    const scan = scanStore(dbFile());
    expect(scan.problems).toEqual([]);
    expect(scan.episodes).toBeGreaterThanOrEqual(stored - 1); // duplicates by externalId are stored once
  }, 60_000);

  it('the webhook refuses malformed JSON, wrong signatures and bad fields with clear answers, stores hostile text normalized, and keeps serving', async () => {
    const post = async (body: string | Buffer, options: { signature?: string | null; contentType?: string; source?: string } = {}) => {
      const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json' };
      const path = `/webhook/${options.source ?? 'chaos'}`;
      // undefined: signed as a sender does; a string: that signature with a fresh timestamp; null: unsigned.
      if (options.signature === undefined) Object.assign(headers, signRequest({ secret: WEBHOOK_SECRET, path, body }));
      else if (options.signature !== null) Object.assign(headers, { [TIMESTAMP_HEADER]: String(Date.now()), [SIGNATURE_HEADER]: options.signature });
      const response = await fetch(`${webhookBase}${path}`, { method: 'POST', headers, body });
      figures.webhookRequests += 1;
      return { status: response.status, json: (await response.json().catch(() => ({}))) as Record<string, unknown> };
    };
    const valid = JSON.stringify({ user: 'u1', text: 'a valid message' });
    expect((await post(valid)).status).toBe(200);

    // Authenticity first: nothing about these bodies is read.
    // Signed under the current scheme (timestamp.method.path.body) but wrong: the post adds a fresh timestamp, so only null and '' fail for want of a signature.
    const ours = (body: string, secret = WEBHOOK_SECRET) => signRequest({ secret, path: '/webhook/chaos', body })[SIGNATURE_HEADER]!;
    const refusedSignatures = [
      null,
      ours(valid, 'another-secret-0123456789'),
      ours(`${valid} `),
      ours(valid).slice(0, 20),
      ours(valid).replace('sha256=', 'sha1='),
      `sha256=${'0'.repeat(64)}`,
      '',
      sign(valid, WEBHOOK_SECRET),
    ];
    for (const signature of refusedSignatures) {
      const answer = await post(valid, { signature });
      expect(answer.status).toBe(401);
      expect(String(answer.json.error)).toMatch(/Missing (or wrong )?x-nocturne-signature/);
    }
    const cases: Array<[string | Buffer, number, RegExp, { contentType?: string }?]> = [
      ['{"user": "u1", "text": ', 400, /The body is not valid JSON/],
      ['{not json at all', 400, /The body is not valid JSON/],
      ['', 400, /The body is not valid JSON/],
      ['[1, 2, 3]', 400, /Invalid request/],
      ['"a string"', 400, /Invalid request/],
      ['null', 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: '' }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: 42 }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: 'x', timestamp: 'yesterday' }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: 'x', admin: true }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: '  \u0000\u0007\uFEFF \r\n' }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u\u0000x', text: 'hello' }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u\u001B[2Jx', text: 'hello' }), 400, /Invalid request/],
      [JSON.stringify({ user: 'u1', text: 'x'.repeat(70 * 1024) }), 413, /The body is larger than 65536 bytes/],
      [valid, 415, /Send JSON/, { contentType: 'text/plain' }],
    ];
    for (const [body, status, error, options] of cases) {
      const answer = await post(body, options);
      expect({ body: String(body).slice(0, 60), status: answer.status }).toEqual({ body: String(body).slice(0, 60), status });
      expect(String(answer.json.error)).toMatch(error);
    }
    // The 400s say which field and why.
    const empty = await post(JSON.stringify({ user: 'u1', text: '\u0000\u0007 ' }));
    expect(empty.json.issues).toEqual([
      { field: 'text', problem: 'text must not be empty (spaces, control and invisible characters such as zero-width spaces do not count)' },
    ]);
    const badUser = await post(JSON.stringify({ user: 'a\u0000b', text: 'hi' }));
    expect(badUser.json.issues).toEqual([{ field: 'user', problem: 'user names the person\u2019s memory: it cannot hold control or invisible characters' }]);
    // Hostile text that is still a message: stored, normalized. JSON escapes carry the NUL and
    // the lone surrogates; raw bytes that are not UTF-8 arrive as U+FFFD.
    const hostile =
      '{"user":"u2","name":"E\\u0000ve\\u0007","messageId":"m\\u00001","text":"NUL \\u0000 lone \\ud800 low \\udc00 esc \\u001b[2J cafe\\u0301 \\ufeff end\\r\\n"}';
    expect((await post(hostile)).status).toBe(200);
    const bytes = Buffer.concat([Buffer.from('{"user":"u3","text":"bytes '), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82]), Buffer.from(' end"}')]);
    expect((await post(bytes)).status).toBe(200);
    const prisma = service.core.db.prisma;
    const u2 = await prisma.episode.findFirstOrThrow({ where: { scope: { key: 'webhook:chaos:u2' }, role: 'user' } });
    expect(u2).toMatchObject({ content: 'NUL  lone \uFFFD low \uFFFD esc [2J caf\u00e9  end', author: 'Eve', externalId: 'm1' });
    const u3 = await prisma.episode.findFirstOrThrow({ where: { scope: { key: 'webhook:chaos:u3' }, role: 'user' } });
    expect(u3.content.isWellFormed()).toBe(true);
    expect(u3.content).toMatch(/^bytes .*\uFFFD.* end$/);
    // Still serving.
    expect((await post(JSON.stringify({ user: 'u1', text: 'still here' }))).status).toBe(200);
    expect(scanStore(dbFile()).problems).toEqual([]);
  }, 60_000);

  it('the agent (every channel\u2019s way in) answers a message it cannot store as the person\u2019s mistake, and creates no scope with a control character', async () => {
    const { agent } = service;
    const empty = await agent.handle({
      channel: 'telegram',
      scopeKey: 'bad:agent',
      scopeKind: 'private',
      authorName: 'Ana',
      text: '\u0000\u0007\u001B',
      timestamp: new Date(),
    });
    expect(empty).toMatchObject({ degraded: 'invalid_message', text: expect.stringMatching(/I could not read that message, sorry\. \(content is empty/) });
    const tooBig = await agent.handle({
      channel: 'telegram',
      scopeKey: 'bad:agent',
      scopeKind: 'private',
      text: 'x'.repeat(MAX_BYTES + 1),
      timestamp: new Date(),
    });
    expect(tooBig).toMatchObject({ degraded: 'invalid_message', text: expect.stringMatching(/EPISODE_MAX_BYTES/) });
    const badKey = await agent.handle({ channel: 'webhook', scopeKey: 'webhook:x:a\u0000b', scopeKind: 'private', text: 'hello', timestamp: new Date() });
    expect(badKey.degraded).toBe('invalid_message');
    // (Read here: a NUL in a LIKE pattern would end the pattern in SQLite.)
    expect((await service.core.db.prisma.scope.findMany({ select: { key: true } })).filter((s) => FORBIDDEN.test(s.key))).toEqual([]);
    expect(await service.core.db.prisma.episode.count({ where: { scope: { key: 'bad:agent' } } })).toBe(0);
    expect(logs.lines().filter((line) => line.includes('"level":"error"') && line.includes('reply failed'))).toEqual([]);
  });

  it('the admin API refuses wrong tokens and malformed bodies with clear answers, and an import of unstorable text writes nothing', async () => {
    const call = async (method: string, route: string, options: { auth?: string | null; body?: string; contentType?: string } = {}) => {
      const headers: Record<string, string> = {};
      if (options.auth !== null) headers.authorization = options.auth ?? `Bearer ${ADMIN_TOKEN}`;
      if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
      const response = await fetch(`${apiBase}${route}`, { method, headers, body: options.body });
      figures.apiRequests += 1;
      const text = await response.text();
      return {
        status: response.status,
        text,
        json: (() => {
          try {
            return JSON.parse(text) as Record<string, unknown>;
          } catch {
            return {};
          }
        })(),
      };
    };
    for (const auth of [
      null,
      'Bearer',
      'Bearer ',
      'Bearer wrong-token-0123456789',
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      `Bearer ${ADMIN_TOKEN}x`,
      `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
      ADMIN_TOKEN,
      `Bearer ${WEBHOOK_SECRET}`,
      'Bearer \u0000',
    ]) {
      let status: number;
      try {
        status = (await call('GET', '/scopes', { auth })).status;
      } catch {
        status = 400; // fetch itself refuses a header with a NUL: nothing reached the server
      }
      expect({ auth, status }).toEqual({ auth, status: auth === 'Bearer \u0000' ? 400 : 401 });
    }
    expect((await call('GET', `/scopes?token=${ADMIN_TOKEN}`, { auth: null })).status).toBe(401);
    expect((await call('GET', '/scopes')).status).toBe(200);

    const scope = (await service.core.scopes.findByKey('bad:service'))!;
    const malformed = await call('POST', `/scopes/${scope.id}/search`, { body: '{"query": "tea",' });
    expect(malformed.status).toBe(400);
    expect(malformed.text).toMatch(/JSON/i);
    for (const body of ['null', '[]', '"tea"', '{"query": "tea", "strategy": "psychic"}', '{"query": "tea", "limit": -5}']) {
      const answer = await call('POST', `/scopes/${scope.id}/search`, { body });
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect(String(answer.json.error ?? answer.json.message)).not.toMatch(/^internal error$/i);
    }

    // An export whose texts no store can keep as written: refused with the paths, nothing written.
    const exported = await call('GET', `/scopes/${scope.id}/export`);
    expect(exported.status).toBe(200);
    const doc = JSON.parse(exported.text) as { episodes: Array<{ content: string; author: string | null }>; memories: unknown[] };
    expect(doc.episodes.length).toBeGreaterThan(3);
    doc.episodes[0]!.content = 'a NUL \u0000 here';
    doc.episodes[1]!.content = 'a lone \uD800 surrogate';
    doc.episodes[2]!.author = 'Bell\u0007';
    const target = await service.core.scopes.ensure({ key: 'bad:import-target', channel: 'test' });
    const refused = await call('POST', `/scopes/${target.id}/import?mode=copy`, { body: JSON.stringify(doc) });
    expect(refused.status).toBe(400);
    expect(refused.json.code).toBe('import.invalid_document');
    expect(String(refused.json.error)).toMatch(/episodes\[0\]\.content: contains a NUL character/);
    expect(String(refused.json.error)).toMatch(/episodes\[1\]\.content: is not well-formed Unicode/);
    expect(String(refused.json.error)).toMatch(/episodes\[2\]\.author: contains control characters/);
    expect(await service.core.db.prisma.episode.count({ where: { scopeId: target.id } })).toBe(0);
    const notJson = await call('POST', `/scopes/${target.id}/import`, { body: '{"format": "nocturne.scope-export",' });
    expect(notJson.status).toBe(400);
    expect((await call('GET', '/healthz', { auth: null })).status).toBe(200);
    expect(scanStore(dbFile()).problems).toEqual([]);
  }, 60_000);

  it('npm run cli -- import: every bad line is reported with its line number, the others are imported, a 10 MB and a 40 MB line cost bounded memory', async () => {
    const dir = tempDir('nocturne-bad-import-');
    const env = cleanEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn', TERMINAL: 'off', SLEEP_ENABLED: 'false' });
    const good = (n: number) => JSON.stringify({ content: `good line ${n}`, externalId: `g${n}` });
    const lines: Array<[string, RegExp | null]> = [
      [good(1), null],
      ['', null],
      ['   \t ', null],
      ['{not json', /not valid JSON/],
      ['{"content": "unterminated', /not valid JSON/],
      ['[1, 2]', /an episode must be a JSON object/],
      ['42', /an episode must be a JSON object/],
      ['null', /an episode must be a JSON object/],
      [JSON.stringify({ content: '' }), /content is empty/],
      [JSON.stringify({ content: ' \u0000\u0007 ' }), /content is empty/],
      [JSON.stringify({ content: 17 }), /content is required and must be a string/],
      [JSON.stringify({ content: 'x', scope: 'bad\u0001scope' }), /scope "bad\\u0001scope" is not a valid scope key/],
      [JSON.stringify({ content: 'x', timestamp: 'yesterday' }), /timestamp must be an ISO 8601/],
      [JSON.stringify({ content: 'NUL \u0000, lone \uD800, esc \u001B[0m, cafe\u0301', externalId: 'hostile' }), null],
      [`\uFEFF${good(2)}`, /not valid JSON/], // a byte order mark is only dropped at the start of the file
      [good(3), null],
      [
        JSON.stringify({ content: 'A'.repeat(10 * 1024 * 1024), externalId: 'ten-mb' }),
        /line 17: content is 10\.0 MiB; the limit is 4\.0 MiB \(EPISODE_MAX_BYTES\)/,
      ],
      [good(4), null],
      [
        JSON.stringify({ content: 'B'.repeat(40 * 1024 * 1024), externalId: 'forty-mb' }),
        /line 19: the line is 40\.0 MiB, longer than any valid episode can be \(17\.0 MiB: 4 x EPISODE_MAX_BYTES \+ 1 MiB\); skipped without reading it/,
      ],
      [`${good(5)}\r`, null],
      [good(6), null],
    ];
    const file = path.join(dir, 'bad.jsonl');
    fs.writeFileSync(file, `${lines.map(([line]) => line).join('\n')}`); // no newline after the last line
    figures.importLines = lines.length;
    const entry = startCli(['import', '--scope', 'bad:cli', file], env);
    const peak = watchPeakMemory(entry);
    // The same command on the small lines alone: the memory it needs anyway.
    const smallFile = path.join(dir, 'small.jsonl');
    fs.writeFileSync(
      smallFile,
      lines
        .filter(([line]) => line.length < 1000)
        .map(([line]) => line)
        .join('\n'),
    );
    const { code } = await entry.ended;
    const baselineEntry = startCli(
      ['import', '--scope', 'bad:cli-small', smallFile],
      cleanEnv({ DATA_DIR: tempDir('nocturne-bad-import-small-'), LOG_LEVEL: 'warn' }),
    );
    const baselinePeak = watchPeakMemory(baselineEntry);
    await baselineEntry.ended;
    expect(code).toBe(1);
    const out = entry.stdout();
    lines.forEach(([, reason], i) => {
      if (reason) expect(out).toMatch(new RegExp(`line ${i + 1}: ${reason.source.replace(/^line \d+: /, '')}`));
    });
    expect(out).toMatch(/imported 6, skipped 0 \(already stored\), invalid 13, blank lines 2 — 21 lines/);
    expect(entry.stderr()).not.toMatch(/RangeError|heap|FATAL|Invalid string length/);
    const used = peak();
    const baseline = baselinePeak();
    if (used !== undefined && baseline !== undefined) {
      // Holding the 40 MB line (as a buffer, a string and a parsed copy) would add well over 100 MB.
      // eslint-disable-next-line no-console
      console.log(`import peak memory: ${(used / 2 ** 20).toFixed(0)} MiB with the 10 MB and 40 MB lines, ${(baseline / 2 ** 20).toFixed(0)} MiB without them`);
      expect(used - baseline).toBeLessThan(90 * 2 ** 20);
    }
    const scan = scanStore(path.join(dir, 'nocturne.db'));
    expect(scan.problems).toEqual([]);
    expect(scan.episodes).toBe(6);
    fs.rmSync(file); // 50 MB
  }, 150_000);

  it('a wrong Telegram bot token stops npm start with a clear error; a malformed one is a configuration error naming the setting', async () => {
    const fake: FakeTelegramServer = await startFakeTelegram();
    try {
      const wrongToken = '987654321:AAWrongTokenForTheChaosTest_abcdefghij';
      const base = { DATA_DIR: tempDir('nocturne-bad-telegram-'), TERMINAL: 'off', SLEEP_ENABLED: 'false', LOG_LEVEL: 'warn', TELEGRAM_API_ROOT: fake.apiRoot };
      const wrong = startEntry('src/main.ts', [], cleanEnv({ ...base, TELEGRAM_BOT_TOKEN: wrongToken }));
      const malformed = startEntry(
        'src/main.ts',
        [],
        cleanEnv({ ...base, DATA_DIR: tempDir('nocturne-bad-telegram-'), TELEGRAM_BOT_TOKEN: 'not a token at all' }),
      );
      const [wrongEnd, malformedEnd] = await Promise.all([wrong.ended, malformed.ended]);
      expect(wrongEnd.code).toBe(1);
      expect(wrong.stderr()).toMatch(/Nocturne could not start: Telegram refused the bot token\nCheck TELEGRAM_BOT_TOKEN: copy it again from @BotFather/);
      expect(wrong.stderr() + wrong.stdout()).not.toContain('AAWrongTokenForTheChaosTest');
      expect(malformedEnd.code).toBe(2);
      expect(malformed.stderr()).toMatch(/TELEGRAM_BOT_TOKEN.*must look like 123456789:AAH/);
      expect(malformed.stderr()).not.toContain('not a token at all');
    } finally {
      await fake.close();
    }
  }, 120_000);

  it('nothing stored anywhere holds NUL, control characters or broken Unicode', () => {
    const scan = scanStore(dbFile());
    expect(scan.problems).toEqual([]);
    expect(scan.episodes).toBeGreaterThan(100);
  });
});
