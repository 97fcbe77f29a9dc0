/**
 * Hostile input, round two (issue 16, items 1, 2, 6 and 10): the import path and the webhook's
 * timestamps, through the real entry points — `npm run cli -- import` as a child process, the admin
 * API (`POST /scopes/:id/import`) and the webhook channel of the composed service over HTTP, and a
 * consolidation tick of the service's own scheduler.
 *
 * 1. Metadata nested 3,000 deep on a JSONL line (20,000 deep in an export posted to the API) is
 *    refused as that line's (that document's) error; the other lines are stored; no 500.
 * 2. A timestamp in the future (beyond 5 minutes of skew) or before 1970 is refused (import line,
 *    webhook 400); a scope whose lastMessageAt an older version set to year 9999 is idle again.
 * 6. A re-run of an interrupted import (SIGKILL mid-way) of lines without externalId stores each
 *    line once; repeated identical lines stay as many rows as lines.
 * 10. `application/json-patch` is not JSON; externalId 12345 (a number) is refused rather than
 *    confused with "12345"; `"scope": ""` with --scope uses the given scope.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets, registerSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { elapsed, freePort } from './chaos-support';
import { startCli } from './crash-support';

const ADMIN_TOKEN = 'adm-hostile-import-0123456789abcdef';
const WEBHOOK_SECRET = 'whk-hostile-import-0123456789abcdef';

/** A JSON object nested `depth` levels deep, as text (JSON.stringify of it would itself recurse). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function cliEnv(dir: string): NodeJS.ProcessEnv {
  return cleanEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn', TERMINAL: 'off', SLEEP_ENABLED: 'false' });
}

/** Runs `cli import` to its end. */
async function importFile(dir: string, args: readonly string[]) {
  const entry = startCli(['import', ...args], cliEnv(dir));
  const { code } = await entry.ended;
  return { code, out: entry.stdout(), err: entry.stderr() };
}

/** Rows of the store under `dir` (read-only, beside a possibly running writer). */
function query<T>(dir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dir, 'nocturne.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

function episodeCount(dir: string, scope: string): number {
  try {
    return query<{ n: number }>(dir, 'SELECT COUNT(*) AS n FROM Episode e JOIN Scope s ON s.id = e.scopeId WHERE s.key = ?', scope)[0]!.n;
  } catch {
    return 0; // no database or no tables yet
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('hostile import, round two (issue 16: items 1, 2, 6, 10)', () => {
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-hostile-import-');
  const logs = memoryLogger();
  const figures: string[] = [];
  let llm: AnthropicDouble;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;

  beforeAll(async () => {
    llm = await startAnthropicDouble({ responder: (seen) => ({ kind: 'text', text: seen.tools.length > 0 ? 'Noted.' : '{}' }) });
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        ANTHROPIC_API_KEY: 'sk-hostile-import-0000',
        ANTHROPIC_BASE_URL: llm.url,
        ADMIN_TOKEN,
        API_PORT: String(apiPort),
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
        SLEEP_ENABLED: 'false',
        SLEEP_MIN_EPISODES: '1',
        SLEEP_WINDOW_HOURS: '24',
        SLEEP_IDLE_MINUTES: '30',
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
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
    console.log(`hostile import: ${figures.join('; ')}; ${elapsed(started)}`);
  });

  const api = async (method: string, route: string, body?: string, contentType = 'application/json') => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = contentType;
    const response = await fetch(`${apiBase}${route}`, { method, headers, body });
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
  const webhook = async (body: string, options: { contentType?: string; source?: string } = {}) => {
    const route = `/webhook/${options.source ?? 'hostile'}`;
    const headers = { 'content-type': options.contentType ?? 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, path: route, body }) };
    const response = await fetch(`${webhookBase}${route}`, { method: 'POST', headers, body });
    return { status: response.status, json: (await response.json().catch(() => ({}))) as Record<string, unknown> };
  };

  it('1. a JSONL line with metadata nested 3,000 deep is one invalid line: the rest are stored, exit 1, no stack overflow', async () => {
    const dir = tempDir('nocturne-hostile-deep-');
    const file = path.join(dir, 'deep.jsonl');
    const deepLine = `{"content":"deep one","metadata":{"x":${nested(3000)}}}`;
    expect(deepLine.length).toBeGreaterThan(17_000);
    fs.writeFileSync(
      file,
      [
        JSON.stringify({ content: 'before the deep line', externalId: 'd1' }),
        deepLine,
        JSON.stringify({ content: 'after the deep line', externalId: 'd3' }),
        // 60 levels are fine (a real document's metadata is a few levels deep).
        `{"content":"sixty deep","externalId":"d4","metadata":{"x":${nested(60)}}}`,
      ].join('\n'),
    );
    const { code, out, err } = await importFile(dir, ['--scope', 'deep:cli', file]);
    expect(err).not.toMatch(/Maximum call stack/);
    expect(out).toMatch(/line 2: metadata is nested more than 64 levels deep/);
    expect(out).toMatch(/imported 3, skipped 0 \(already stored\), invalid 1/);
    expect(code).toBe(1);
    expect(episodeCount(dir, 'deep:cli')).toBe(3);
    figures.push('deep JSONL line (3,000 levels): refused, 3 others stored');
  }, 120_000);

  it('1. the admin API answers 400 naming the place for an export with metadata nested 20,000 deep, and keeps serving', async () => {
    const source = await service.core.scopes.ensure({ key: 'deep:api-source', channel: 'test' });
    await service.core.episodeService.ingest({ key: 'deep:api-source', channel: 'test' }, { content: 'one message', externalId: 'a1' });
    const exported = await api('GET', `/scopes/${source.id}/export`);
    expect(exported.status).toBe(200);
    const doc = JSON.parse(exported.text) as { episodes: Array<{ metadata: unknown }> };
    doc.episodes[0]!.metadata = '__DEEP__';
    const body = JSON.stringify(doc).replace('"__DEEP__"', `{"x":${nested(20_000)}}`);
    const target = await service.core.scopes.ensure({ key: 'deep:api-target', channel: 'test' });
    const answer = await api('POST', `/scopes/${target.id}/import?mode=copy`, body);
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe('import.invalid_document');
    expect(String(answer.json.error)).toMatch(/episodes\[0\]\.metadata: nested more than \d+ levels deep/);
    expect(await service.core.db.prisma.episode.count({ where: { scopeId: target.id } })).toBe(0);
    expect((await api('GET', '/healthz')).status).toBe(200);
    figures.push('API export with 20,000 levels: 400');
  }, 60_000);

  it('2. import lines dated 9999-12-31, or before 1970, are refused with a clear reason; the scope stays consolidatable', async () => {
    const dir = tempDir('nocturne-hostile-time-');
    const file = path.join(dir, 'time.jsonl');
    const soon = new Date(Date.now() + 60_000).toISOString(); // within the allowed skew
    fs.writeFileSync(
      file,
      [
        JSON.stringify({ content: 'a real message from 2024', timestamp: '2024-05-08T13:56:00Z', externalId: 't1' }),
        JSON.stringify({ content: 'from the far future', timestamp: '9999-12-31T23:59:59Z', externalId: 't2' }),
        JSON.stringify({ content: 'a date-only far future', timestamp: '9999-12-31', externalId: 't3' }),
        JSON.stringify({ content: 'before the epoch', timestamp: '1969-12-31T23:59:59Z', externalId: 't4' }),
        JSON.stringify({ content: 'year zero', timestamp: '0000-01-01T00:00:00Z', externalId: 't5' }),
        JSON.stringify({ content: 'a minute ahead (clock skew)', timestamp: soon, externalId: 't6' }),
      ].join('\n'),
    );
    const { code, out } = await importFile(dir, ['--scope', 'time:cli', file]);
    expect(out).toMatch(/line 2: timestamp 9999-12-31T23:59:59Z is in the future/);
    expect(out).toMatch(/line 3: timestamp 9999-12-31 is in the future/);
    expect(out).toMatch(/line 4: timestamp 1969-12-31T23:59:59Z is before 1970-01-01/);
    expect(out).toMatch(/line 5: timestamp 0000-01-01T00:00:00Z is before 1970-01-01/);
    expect(out).toMatch(/imported 2, skipped 0 \(already stored\), invalid 4/);
    expect(code).toBe(1);
    const [scope] = query<{ lastMessageAt: number | string }>(dir, "SELECT lastMessageAt FROM Scope WHERE key = 'time:cli'");
    // Never ahead of now (the line a minute ahead does not move it past the clock).
    expect(new Date(scope!.lastMessageAt).getTime()).toBeLessThanOrEqual(Date.now());
    figures.push('import timestamps 9999 / 1969 / 0000: refused');
  }, 120_000);

  it('2. the webhook answers 400 for a far-future or pre-1970 timestamp and stores nothing', async () => {
    for (const timestamp of ['9999-12-31T00:00:00Z', '2999-01-01T00:00:00Z', '1969-07-20T20:17:00Z']) {
      const answer = await webhook(JSON.stringify({ user: 'time', text: 'a dated message', timestamp }));
      expect({ timestamp, status: answer.status }).toEqual({ timestamp, status: 400 });
      expect(JSON.stringify(answer.json.issues)).toMatch(/timestamp/);
    }
    expect(await service.core.scopes.findByKey('webhook:hostile:time')).toBeNull();
    expect((await webhook(JSON.stringify({ user: 'time', text: 'now then', timestamp: new Date().toISOString() }))).status).toBe(200);
    const scope = (await service.core.scopes.findByKey('webhook:hostile:time'))!;
    expect(scope.lastMessageAt!.getTime()).toBeLessThanOrEqual(Date.now());
    figures.push('webhook timestamps 9999 / 2999 / 1969: 400');
  }, 60_000);

  it('2. a scope an older version left at lastMessageAt 9999-12-31 is idle again for the consolidation tick, and a new message repairs it', async () => {
    const prisma = service.core.db.prisma;
    const poisoned = await service.core.scopes.ensure({ key: 'time:poisoned', channel: 'test' });
    await service.core.episodeService.ingest(
      { key: 'time:poisoned', channel: 'test' },
      { content: 'an old message', timestamp: '2024-01-01T00:00:00Z', externalId: 'p1' },
    );
    await prisma.scope.update({ where: { id: poisoned.id }, data: { lastMessageAt: new Date('9999-12-31T00:00:00Z') } });
    const report = await service.core.scheduler.runConsolidation(new Date());
    const mine = report.scopes.find((s) => s.scopeId === poisoned.id);
    expect(mine).toBeDefined();
    expect(mine!.detail ?? '').not.toMatch(/not idle/i);
    expect(mine!.status).not.toBe('not-due');
    // A message now brings the time back to the present.
    await service.core.episodeService.ingest({ key: 'time:poisoned', channel: 'test' }, { content: 'a new message', externalId: 'p2' });
    const fresh = await prisma.scope.findUniqueOrThrow({ where: { id: poisoned.id } });
    expect(fresh.lastMessageAt!.getTime()).toBeLessThanOrEqual(Date.now());
    figures.push(`poisoned scope: consolidation tick ${mine!.status}`);
  }, 60_000);

  it('6. a re-run of an import killed mid-way stores each line without externalId once', async () => {
    const dir = tempDir('nocturne-hostile-rerun-');
    const file = path.join(dir, 'history.jsonl');
    const N = 6_000;
    const lines: string[] = [];
    for (let i = 1; i <= N; i++) {
      if (i % 1000 === 7)
        lines.push(lines[lines.length - 1]!); // the same line twice in a row: two messages
      else if (i % 3 === 0) lines.push(JSON.stringify({ content: `undated message ${i}`, role: i % 2 ? 'user' : 'assistant' }));
      else
        lines.push(
          JSON.stringify({ content: `dated message ${i}`, timestamp: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(), conversationId: `c${i % 7}` }),
        );
    }
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const entry = startCli(['import', '--scope', 'rerun:cli', file], cliEnv(dir));
    let atKill = 0;
    for (;;) {
      atKill = episodeCount(dir, 'rerun:cli');
      if (atKill > 0 || !entry.running()) break;
      await sleep(20);
    }
    entry.kill();
    const ended = await entry.ended;
    atKill = episodeCount(dir, 'rerun:cli');
    expect(ended.signal).toBe('SIGKILL');
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(N);

    const second = await importFile(dir, ['--scope', 'rerun:cli', file]);
    expect(second.code).toBe(0);
    expect(episodeCount(dir, 'rerun:cli')).toBe(N);
    expect(second.out).toMatch(new RegExp(`imported ${N - atKill}, skipped ${atKill} \\(already stored\\), invalid 0`));
    const third = await importFile(dir, ['--scope', 'rerun:cli', file]);
    expect(third.out).toMatch(new RegExp(`imported 0, skipped ${N} \\(already stored\\), invalid 0`));
    expect(episodeCount(dir, 'rerun:cli')).toBe(N);
    // The repeated lines are two rows each.
    const repeated = query<{ n: number }>(dir, 'SELECT COUNT(*) AS n FROM Episode WHERE content = ?', JSON.parse(lines[6]!).content as string)[0]!.n;
    expect(repeated).toBe(2);
    figures.push(`re-run after SIGKILL at ${atKill} of ${N} rows: ${N} rows`);
  }, 300_000);

  it('6. a file imported in part (a prefix), then whole, then renamed, gives each line once; lines with an externalId keep it', async () => {
    const dir = tempDir('nocturne-hostile-prefix-');
    const whole = Array.from({ length: 40 }, (_, i) =>
      JSON.stringify(
        i % 5 === 0 ? { content: `with id ${i}`, externalId: `ext-${i}` } : { content: `line ${i}`, timestamp: `2024-02-0${1 + (i % 9)}T10:00:00Z` },
      ),
    );
    const prefixFile = path.join(dir, 'part.jsonl');
    const wholeFile = path.join(dir, 'whole.jsonl');
    const renamed = path.join(dir, 'copy-of-whole.jsonl');
    fs.writeFileSync(prefixFile, whole.slice(0, 15).join('\n'));
    fs.writeFileSync(wholeFile, whole.join('\n'));
    fs.writeFileSync(renamed, whole.join('\n'));
    expect((await importFile(dir, ['--scope', 'rerun:prefix', prefixFile])).out).toMatch(/imported 15, skipped 0/);
    expect((await importFile(dir, ['--scope', 'rerun:prefix', wholeFile])).out).toMatch(/imported 25, skipped 15/);
    expect((await importFile(dir, ['--scope', 'rerun:prefix', renamed])).out).toMatch(/imported 0, skipped 40/);
    expect(episodeCount(dir, 'rerun:prefix')).toBe(40);
    const ids = query<{ externalId: string }>(dir, "SELECT externalId FROM Episode WHERE content LIKE 'with id %' ORDER BY externalId").map(
      (r) => r.externalId,
    );
    expect(ids).toEqual(['ext-0', 'ext-10', 'ext-15', 'ext-20', 'ext-25', 'ext-30', 'ext-35', 'ext-5']);
  }, 180_000);

  it('10. application/json-patch is not JSON to the webhook or the admin API', async () => {
    const body = JSON.stringify({ user: 'ctype', text: 'hello' });
    for (const contentType of ['application/json-patch', 'application/json-patch+json', 'application/jsonx', 'application/json5']) {
      const answer = await webhook(body, { contentType });
      expect({ contentType, status: answer.status }).toEqual({ contentType, status: 415 });
      const scope = (await service.core.scopes.findByKey('deep:api-source'))!;
      const apiAnswer = await api('POST', `/scopes/${scope.id}/search`, JSON.stringify({ query: 'message' }), contentType);
      expect({ contentType, status: apiAnswer.status }).toEqual({ contentType, status: 415 });
    }
    expect(await service.core.scopes.findByKey('webhook:hostile:ctype')).toBeNull();
    expect((await webhook(body, { contentType: 'application/json; charset=utf-8' })).status).toBe(200);
    figures.push('json-patch content types: 415');
  }, 60_000);

  it('10. externalId 12345 (a number) is refused, not confused with "12345"; "scope": "" with --scope uses the given scope', async () => {
    const dir = tempDir('nocturne-hostile-ids-');
    const file = path.join(dir, 'ids.jsonl');
    fs.writeFileSync(
      file,
      [
        JSON.stringify({ content: 'the string id', externalId: '12345' }),
        JSON.stringify({ content: 'the number id', externalId: 12345 }),
        JSON.stringify({ content: 'empty scope field', scope: '', externalId: 'e1' }),
        JSON.stringify({ content: 'a number scope', scope: 42, externalId: 'e2' }),
      ].join('\n'),
    );
    const { code, out } = await importFile(dir, ['--scope', 'ids:cli', file]);
    expect(out).toMatch(/line 2: externalId must be a string \(write "12345"\)/);
    expect(out).toMatch(/line 4: scope must be a string/);
    expect(out).not.toMatch(/no scope/i);
    expect(out).toMatch(/imported 2, skipped 0 \(already stored\), invalid 2/);
    expect(code).toBe(1);
    const rows = query<{ content: string; externalId: string; scope: string }>(
      dir,
      'SELECT e.content, e.externalId, s.key AS scope FROM Episode e JOIN Scope s ON s.id = e.scopeId ORDER BY e.content',
    );
    expect(rows).toEqual([
      { content: 'empty scope field', externalId: 'e1', scope: 'ids:cli' },
      { content: 'the string id', externalId: '12345', scope: 'ids:cli' },
    ]);
    // Without --scope, the empty scope field is reported as what it is.
    const alone = await importFile(dir, [path.join(dir, 'ids.jsonl')]);
    expect(alone.out).toMatch(/line 3: no scope: the line's "scope" is empty and no --scope was given/);
  }, 120_000);
});
