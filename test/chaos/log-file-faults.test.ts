/**
 * Hostile input, round three: a log file that cannot be written never stops the service.
 * `npm start` (src/main.ts as a child process) with LOG_FILE on
 * - /dev/full (a symlink to it: every write fails with ENOSPC), and
 * - a 64 KiB tmpfs filled to the last byte (mounted here when the test may mount; skipped with
 *   the reason otherwise), filled before the start and again while it runs, then emptied;
 * - a path whose folder cannot be made (under a regular file).
 * Each time the service starts, answers /healthz, logs to stderr instead with one warning naming
 * the file and the error, starts again with the disk still full, stops cleanly on SIGTERM, and
 * once the disk has room again the file takes lines again.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { signRequest } from '../../src/channels/webhook/signature';
import { LOG_FILE_RETRY_MS } from '../../src/shared/log-file';
import { tempDir } from '../support/databases';
import { cleanEnv } from '../support/run-process';
import { freePort } from './chaos-support';
import { sleepMs, startEntry, waitFor, type Entry } from './crash-support';

const WEBHOOK_SECRET = 'whk-log-file-0123456789abcdef';
const WARNING = /the log file cannot be written; logs go to stderr until it can/g;
const TINY_DISK = '64k';

const root = tempDir('nocturne-chaos-log-file-');
const entries: Entry[] = [];

/** Mounts a tmpfs of TINY_DISK at `dir`; the reason when this machine does not let us. */
function mountTinyDisk(dir: string): string | null {
  fs.mkdirSync(dir, { recursive: true });
  if (process.platform !== 'linux') return 'mounting a tmpfs needs Linux';
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${TINY_DISK}`, 'tmpfs', dir], { encoding: 'utf8' });
  return result.status === 0 ? null : `cannot mount a tmpfs here (${(result.stderr || result.error?.message || '').trim()})`;
}

/** Writes a filler file until the disk is full; returns its path. */
function fill(dir: string): string {
  const filler = path.join(dir, `filler-${Date.now()}`);
  const fd = fs.openSync(filler, 'a');
  const block = Buffer.alloc(512, 120);
  try {
    for (;;) fs.writeSync(fd, block);
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

const disk = path.join(root, 'disk');
const mountProblem = mountTinyDisk(disk);

async function start(logFile: string, ports: { api: number; webhook: number }): Promise<Entry> {
  const entry = startEntry(
    'src/main.ts',
    [],
    cleanEnv({
      DATA_DIR: path.join(root, 'data'),
      LOG_FILE: logFile,
      LOG_LEVEL: 'info',
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      LLM_PROVIDER: 'ollama',
      OLLAMA_HOST: 'http://127.0.0.1:9',
      ADMIN_TOKEN: 'adm-log-file-0123456789abcdef',
      API_PORT: String(ports.api),
      WEBHOOK_SECRET,
      WEBHOOK_PORT: String(ports.webhook),
    }),
  );
  entries.push(entry);
  await waitFor(() => entry.logged(/Nocturne is ready/), { timeoutMs: 90_000, intervalMs: 50, stop: () => !entry.running() });
  return entry;
}

/** Whether it started: ready, /healthz answers 200, still running. */
async function serving(entry: Entry, apiPort: number): Promise<boolean> {
  if (!entry.running() || !entry.logged(/Nocturne is ready/)) return false;
  const response = await fetch(`http://127.0.0.1:${apiPort}/healthz`).catch(() => undefined);
  return response?.status === 200 && entry.running();
}

/** Makes the service log a warning: a signed request posted twice (the copy is refused and logged). */
async function provokeLogLine(webhookPort: number): Promise<void> {
  const body = '{}';
  const headers = { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/logs', body }) };
  for (let i = 0; i < 2; i++) await fetch(`http://127.0.0.1:${webhookPort}/webhook/logs`, { method: 'POST', headers, body });
}

/** SIGTERM; resolves with the exit code. */
async function stopEntry(entry: Entry): Promise<number | null> {
  if (!entry.running()) return (await entry.ended).code;
  entry.child.kill('SIGTERM');
  const timer = setTimeout(() => entry.kill(), 20_000);
  const { code } = await entry.ended;
  clearTimeout(timer);
  return code;
}

/** What a start did, for the figures and a readable failure. */
async function outcome(entry: Entry, apiPort: number) {
  const up = await serving(entry, apiPort);
  return {
    serving: up,
    warnings: entry.stderr().match(WARNING)?.length ?? 0,
    ended: entry.running() ? null : (await entry.ended).code,
    stderrTail: up ? '' : entry.stderr().slice(-600),
  };
}

describe('a log file that cannot be written never stops the service (chaos)', () => {
  afterAll(async () => {
    for (const entry of entries) entry.kill();
    await Promise.all(entries.map((e) => e.ended));
    if (!mountProblem) spawnSync('umount', [disk]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('LOG_FILE -> /dev/full: starts, answers /healthz, warns once, stops cleanly, and starts again', async () => {
    const logFile = path.join(root, 'full.log');
    fs.symlinkSync('/dev/full', logFile);
    const ports = { api: await freePort(), webhook: await freePort() };
    for (const run of ['first start', 'second start']) {
      const entry = await start(logFile, ports);
      await provokeLogLine(ports.webhook);
      expect({ run, ...(await outcome(entry, ports.api)) }).toEqual({ run, serving: true, warnings: 1, ended: null, stderrTail: '' });
      // The lines the file refused are on stderr.
      expect(await waitFor(() => entry.logged(/a replayed webhook request was refused/), { timeoutMs: 10_000 })).toBe(true);
      expect(await stopEntry(entry)).toBe(0);
      expect(entry.logged(/stopped cleanly/)).toBe(true);
    }
  }, 240_000);

  it('LOG_FILE in a folder that cannot be made: starts and logs to stderr', async () => {
    const blocker = path.join(root, 'a-file');
    fs.writeFileSync(blocker, 'not a folder');
    const ports = { api: await freePort(), webhook: await freePort() };
    const entry = await start(path.join(blocker, 'logs', 'nocturne.log'), ports);
    expect(await outcome(entry, ports.api)).toEqual({ serving: true, warnings: 1, ended: null, stderrTail: '' });
    expect(await stopEntry(entry)).toBe(0);
  }, 120_000);

  if (mountProblem) {
    it.skip(`LOG_FILE on a full 64 KiB tmpfs: skipped: ${mountProblem}`, () => undefined);
  } else {
    it('LOG_FILE on a full 64 KiB tmpfs: starts full, keeps running when it fills again, writes the file again once there is room', async () => {
      const logFile = path.join(disk, 'logs', 'nocturne.log');
      const ports = { api: await freePort(), webhook: await freePort() };
      let filler = fill(disk);
      // Started twice with the disk full.
      for (const run of ['first start, disk full', 'second start, disk still full']) {
        const entry = await start(logFile, ports);
        await provokeLogLine(ports.webhook);
        expect({ run, ...(await outcome(entry, ports.api)) }).toEqual({ run, serving: true, warnings: 1, ended: null, stderrTail: '' });
        if (run.startsWith('first')) expect(await stopEntry(entry)).toBe(0);
        else {
          // Room again: after the retry delay the next line goes to the file, after a note.
          fs.rmSync(filler);
          await sleepMs(LOG_FILE_RETRY_MS + 500);
          await provokeLogLine(ports.webhook);
          const written = await waitFor(() => /the log file is written again/.test(fs.readFileSync(logFile, 'utf8')), { timeoutMs: 10_000, intervalMs: 50 });
          expect(written).toBe(true);
          expect(fs.readFileSync(logFile, 'utf8')).toMatch(/a replayed webhook request was refused/);
          expect(await waitFor(() => entry.logged(/the log file is written again/), { timeoutMs: 10_000 })).toBe(true);
          // Full again while it runs: it keeps serving, logs to stderr, warns once more.
          filler = fill(disk);
          for (let i = 0; i < 40; i++) await provokeLogLine(ports.webhook);
          await waitFor(() => (entry.stderr().match(WARNING)?.length ?? 0) >= 2, { timeoutMs: 10_000 });
          expect(await outcome(entry, ports.api)).toEqual({ serving: true, warnings: 2, ended: null, stderrTail: '' });
          expect(await stopEntry(entry)).toBe(0);
        }
      }
    }, 300_000);
  }
});
