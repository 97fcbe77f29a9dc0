/**
 * A person's reminders through export and import, with the real CLI and `npm start` (child
 * processes, real SQLite files): the export holds them; an exact import into another installation
 * keeps the one still to come (it fires there, "(late)" when its time passed meanwhile) and the
 * sent one sent; a copy under `--as` keeps them as history but cancelled, so nothing Ana asked for
 * is delivered again, to her terminal or to the chat the copy's key names.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase } from '../../src/storage/database';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { cleanEnv, nodeArgs, ROOT, runCli } from '../support/run-process';
import { seedScope } from '../support/scope-fixture';
import { sleepMs } from './crash-support';

/** Each test runs several CLI processes and a service, seconds each on a loaded machine. */
const TEST_TIMEOUT = 300_000;
/** Time allowed for the service to start and print what is due. */
const SLOW_MS = 90_000;
/** How long a started terminal is watched after the first reminder for a second print. */
const SETTLE_MS = 4_000;
/** When the terminal is left and the service has not stopped, it is killed. */
const STOP_MS = 20_000;
const ANA = 'terminal:ana';
const BOB = 'terminal:bob';
const PENDING = 'Call the dentist';
const SENT = 'Water the plants';
/** The pending reminder came due an hour before the import: it goes out at the next start, late. */
const OVERDUE_MS = 60 * 60_000;

/** Lines of terminal output that are reminders of `text`. */
const printed = (output: string, text: string): string[] => output.split('\n').filter((l) => l.startsWith('⏰ Reminder') && l.includes(text));

/**
 * `npm start` with the terminal of `user`, watched until it has printed something and, when
 * `awaited` is given, that reminder (or SLOW_MS), then a few reminder passes more, then left.
 */
async function terminalOutput(env: NodeJS.ProcessEnv, user: string, awaited?: string): Promise<{ out: string; code: number | null }> {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), {
    env: { ...env, TERMINAL_USER: user },
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', () => undefined);
  const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  // Started: the terminal prints its greeting (or a reminder) once the service is up.
  const shown = () => out.length > 0 && (awaited === undefined || printed(out, awaited).length > 0);
  const deadline = Date.now() + SLOW_MS;
  while (!shown() && Date.now() < deadline) await sleepMs(200);
  await sleepMs(SETTLE_MS);
  child.stdin.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS);
  const code = await ended;
  clearTimeout(timer);
  return { out, code };
}

interface ExportedReminder {
  text: string;
  status: string;
  dueAt: string;
}

describe('reminders in export and import (CLI and npm start, SQLite)', () => {
  const dir = tempDir('nocturne-reminders-export-');
  const file = path.join(dir, 'ana.json');
  let model: AnthropicDouble;
  let ollama: OllamaDouble;
  let from: NodeJS.ProcessEnv;
  let to: NodeJS.ProcessEnv;
  const overdue = new Date(Date.now() - OVERDUE_MS);

  beforeAll(async () => {
    model = await startAnthropicDouble();
    ollama = await startOllamaDouble({ models: ['nomic-embed-text'] });
    const env = (data: string) =>
      cleanEnv({
        DATA_DIR: path.join(dir, data),
        TERMINAL: 'on',
        SLEEP_ENABLED: 'false',
        ANTHROPIC_API_KEY: 'sk-ant-reminders-export-000000',
        ANTHROPIC_BASE_URL: model.url,
        EMBEDDER: 'ollama',
        EMBEDDING_MODEL: 'nomic-embed-text',
        OLLAMA_HOST: ollama.url,
        REMINDER_CHECK_SECONDS: '1',
      });
    from = env('from');
    to = env('to');
    const config = loadConfig({ env: { DATA_DIR: from.DATA_DIR! }, envFile: false });
    const db = await openDatabase({ database: config.database, logger: createSilentLogger() });
    const { scopeId } = await seedScope(db.prisma, ANA);
    await db.prisma.reminder.create({ data: { scopeId, text: PENDING, dueAt: overdue, channel: 'terminal' } });
    await db.prisma.reminder.create({
      data: {
        scopeId,
        text: SENT,
        dueAt: new Date('2024-02-01T08:00:00Z'),
        channel: 'terminal',
        status: 'sent',
        attempts: 1,
        sentAt: new Date('2024-02-01T08:00:01Z'),
      },
    });
    await db.close();
  });
  afterAll(async () => {
    await model?.stop();
    await ollama?.stop();
  });

  it(
    'exports them, an exact import fires the pending one (late) and keeps the sent one sent; a copy delivers none',
    async () => {
      const exported = await runCli(['export', '--scope', ANA, '--out', file], from);
      expect({ code: exported.code, stderr: exported.code === 0 ? '' : exported.stderr }).toEqual({ code: 0, stderr: '' });
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { reminders?: ExportedReminder[] };
      expect((doc.reminders ?? []).map((r) => [r.text, r.status])).toEqual([
        [PENDING, 'pending'],
        [SENT, 'sent'],
      ]);

      const exact = await runCli(['import-scope', file, '--json'], to);
      expect({ code: exact.code, stderr: exact.code === 0 ? '' : exact.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(exact.stdout)).toMatchObject({ mode: 'exact', counts: { reminders: 2 } });
      const copy = await runCli(['import-scope', file, '--as', BOB, '--json'], to);
      expect({ code: copy.code, stderr: copy.code === 0 ? '' : copy.stderr }).toEqual({ code: 0, stderr: '' });
      const copied = await runCli(['export', '--scope', BOB], to);
      const copyDoc = JSON.parse(copied.stdout) as { reminders?: ExportedReminder[] };

      const ana = await terminalOutput(to, 'ana', PENDING);
      const bob = await terminalOutput(to, 'bob');
      // eslint-disable-next-line no-console
      console.log(
        `reminders after import: Ana's terminal printed ${JSON.stringify([...printed(ana.out, PENDING), ...printed(ana.out, SENT)])}, ` +
          `the copy's (Bob's) ${JSON.stringify([...printed(bob.out, PENDING), ...printed(bob.out, SENT)])}; ` +
          `copy statuses ${JSON.stringify((copyDoc.reminders ?? []).map((r) => r.status))}`,
      );

      // The copy keeps them as history, cancelled (the sent one stays sent).
      expect((copyDoc.reminders ?? []).map((r) => [r.text, r.status])).toEqual([
        [PENDING, 'cancelled'],
        [SENT, 'sent'],
      ]);
      // Ana's terminal gets the one still to come once, late; never the sent one.
      expect(printed(ana.out, PENDING)).toEqual([`⏰ Reminder (late): ${PENDING}`]);
      expect(printed(ana.out, SENT)).toEqual([]);
      // The copy's chat gets nothing Ana asked for.
      expect([...printed(bob.out, PENDING), ...printed(bob.out, SENT)]).toEqual([]);
      expect([ana.code, bob.code]).toEqual([0, 0]);
    },
    TEST_TIMEOUT,
  );
});
