/**
 * Hostile input, round three: a message made only of zero-width, format, control and space
 * characters shows nothing, and every door refuses it as empty (nothing stored, the reason said):
 * the webhook channel (400), the terminal channel of the composed service (the agent's "could not
 * read that message" answer, no model call), and `npm run cli -- import` as a child process (the
 * line refused, the others stored). The admin import is in scope-references.test.ts. A message
 * that merely contains such characters (an emoji sequence with a zero-width joiner) is stored as
 * written.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { elapsed, freePort } from './chaos-support';
import { startCli, waitFor } from './crash-support';

const WEBHOOK_SECRET = 'whk-blank-0123456789abcdef';

/** Texts that show nothing: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi marks, fillers. */
const INVISIBLE = [
  '\u200b\u200c\u200d',
  '\u2060\ufeff\u00ad',
  '\u200e\u200f\u202a\u202c\u2066\u2069',
  ' \u3164\u115f\u2800 \u180e\ufe0f ',
  '\u0001\u200b\u0007\u00a0\u2028\u2029\u3000',
];

describe('hostile input, round three: invisible messages are empty on every door (chaos)', () => {
  const logs = memoryLogger();
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-blank-');
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = '';
  let double: AnthropicDouble;
  let service: RunningService;
  let webhookBase: string;
  const figures: Record<string, unknown> = {};

  const post = async (body: Record<string, unknown>) => {
    const text = JSON.stringify(body);
    const response = await fetch(`${webhookBase}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body: text }) },
      body: text,
    });
    return { status: response.status, text: await response.text() };
  };
  const userTurns = async (key: string) => {
    const scope = await service.core.scopes.findByKey(key);
    return scope ? service.core.db.prisma.episode.findMany({ where: { scopeId: scope.id, role: 'user' }, select: { content: true } }) : [];
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    const webhookPort = await freePort();
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        ANTHROPIC_API_KEY: 'sk-ant-test-blank',
        ANTHROPIC_BASE_URL: double.url,
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'on',
        TERMINAL_USER: 'ana',
        SLEEP_ENABLED: 'false',
        LOG_FORMAT: 'json',
      },
      envFile: false,
    });
    output.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    service = await startService(config, logs.logger, { input, output });
    webhookBase = `http://127.0.0.1:${webhookPort}`;
  }, 90_000);

  afterAll(async () => {
    input.end();
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`blank-messages: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('the webhook answers 400 for each invisible text and stores nothing; an emoji with a joiner is stored', async () => {
    const statuses: number[] = [];
    for (const [i, text] of INVISIBLE.entries()) {
      const answer = await post({ user: 'ghost', text, messageId: `g${i}` });
      statuses.push(answer.status);
      if (answer.status === 400) expect(answer.text).toMatch(/text must not be empty/);
    }
    const stored = await userTurns('webhook:crm:ghost');
    figures.webhook = { statuses, stored: stored.length };
    expect(statuses).toEqual(INVISIBLE.map(() => 400));
    expect(stored).toEqual([]);
    const family = '\u{1F468}\u200d\u{1F469}\u200d\u{1F467}';
    expect((await post({ user: 'family', text: family })).status).toBe(200);
    expect(await userTurns('webhook:crm:family')).toEqual([{ content: family }]);
  }, 60_000);

  it('the terminal channel refuses each invisible line with the reason, without a model call', async () => {
    const calls = double.requests.length;
    const from = printed.length;
    input.write(`${INVISIBLE.slice(0, 2).join('\n')}\nhello there\n`);
    expect(await waitFor(() => printed.slice(from).includes('Noted.'), { timeoutMs: 60_000, intervalMs: 50 })).toBe(true);
    const scope = (await service.core.db.prisma.scope.findMany({ where: { channel: 'terminal' } }))[0];
    const stored = scope ? await service.core.db.prisma.episode.findMany({ where: { scopeId: scope.id, role: 'user' }, select: { content: true } }) : [];
    const refusals = printed.slice(from).match(/content is empty/g)?.length ?? 0;
    figures.terminal = { stored: stored.map((e) => e.content), refusals, modelCalls: double.requests.length - calls };
    expect(stored).toEqual([{ content: 'hello there' }]);
    expect(refusals).toBe(2);
    expect(double.requests.length - calls).toBe(1);
  }, 90_000);

  it('`npm run cli -- import` refuses the invisible lines, naming them, and stores the others', async () => {
    const dir = tempDir('nocturne-chaos-blank-cli-');
    try {
      const file = path.join(dir, 'lines.jsonl');
      fs.writeFileSync(
        file,
        [JSON.stringify({ content: 'a real line', externalId: 'r1' }), ...INVISIBLE.map((content, i) => JSON.stringify({ content, externalId: `z${i}` }))].join(
          '\n',
        ),
      );
      const entry = startCli(['import', '--scope', 'blank:cli', file], cleanEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn', TERMINAL: 'off', SLEEP_ENABLED: 'false' }));
      const { code } = await entry.ended;
      const db = new Database(path.join(dir, 'nocturne.db'), { readonly: true });
      const rows = db.prepare('SELECT e."content" FROM "Episode" e JOIN "Scope" s ON s."id" = e."scopeId" WHERE s."key" = ?').all('blank:cli');
      db.close();
      figures.cliImport = { code, stored: rows.length };
      expect(entry.stdout()).toMatch(/line 2: content is empty/);
      expect(entry.stdout()).toMatch(/imported 1, skipped 0 \(already stored\), invalid 5/);
      expect(rows).toEqual([{ content: 'a real line' }]);
      expect(code).toBe(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
