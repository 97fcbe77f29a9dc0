/**
 * Hostile input, round three: `npm start` (src/main.ts as a child process) migrating a SQLite
 * file that another process has open.
 *
 * The schema engine migrates under SQLite's exclusive lock, and in WAL mode any open connection
 * holds a shared lock. The first attempt waits out the busy timeout (10 s), and the adapter
 * reported the failure as `SocketTimeout`, a kind the WebAssembly engine cannot read: the start
 * died with "WASM_ERROR ... unknown variant `SocketTimeout`".
 *
 * - a reader (this test process) that keeps the file until the start has waited out the busy
 *   timeout and said it is waiting, then closes it: the start goes on and becomes ready;
 * - a reader that never closes the file: the start ends with an error that says the file is
 *   locked and names this process's pid, never WASM_ERROR or SocketTimeout; once the reader is
 *   gone the next start works;
 * - the guard: `npm start` killed with SIGKILL at a seeded moment after the engine's first write,
 *   then started again, which must become ready (CHAOS_SEED=<n> replays, CHAOS_TRIALS=<n> sets the
 *   trials).
 *
 * The three run side by side (each on its own folder): the first two mostly wait on the lock (the
 * second for the whole 30 s a start waits for it), the third mostly starts processes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { findFileHolders } from '../../src/storage/sqlite-file-holders';
import { cleanEnv } from '../support/run-process';
import { chaosSeed, elapsed, freePort } from './chaos-support';
import { createCrashTrials, fileSize, startEntry, startNow, trialsPerPhase, waitFor, type Entry } from './crash-support';

const seed = chaosSeed('migration-lock');
const KILL_TRIALS = trialsPerPhase(3);
/** The kill comes this many ms at most after the engine's first write (the first migration lasts ~50-150 ms). */
const MAX_KILL_DELAY_MS = 400;
/**
 * What the start logs once its first attempt has waited out the busy timeout (10 s). The first reader
 * keeps the file until this line, not for a fixed time: on a busy machine the start can take longer
 * than any fixed hold to reach its first attempt, and then never has to wait.
 */
const WAITING_LINE = /migrations need it alone: waiting for it to close/;
/** Generous bounds for a loaded 2-core machine. */
const START_TIMEOUT_MS = 120_000;
const { tempDir, track, phaseRng, stop, removeFolders } = createCrashTrials(seed);

async function environment(dir: string): Promise<{ env: NodeJS.ProcessEnv; apiPort: number }> {
  const apiPort = await freePort();
  const env = cleanEnv({
    DATA_DIR: dir,
    LOG_LEVEL: 'info',
    TERMINAL: 'off',
    SLEEP_ENABLED: 'false',
    LLM_PROVIDER: 'ollama',
    OLLAMA_HOST: 'http://127.0.0.1:9',
    ADMIN_TOKEN: 'adm-migration-lock-0123456789abcdef',
    API_PORT: String(apiPort),
  });
  return { env, apiPort };
}

/** An empty database file in WAL mode, and a connection of this process reading it (a shared lock). */
function openReader(file: string): Database.Database {
  const setup = new Database(file);
  setup.pragma('journal_mode = WAL');
  setup.close();
  const reader = new Database(file, { fileMustExist: true });
  reader.prepare('SELECT count(*) FROM sqlite_master').get();
  return reader;
}

/** SIGTERM; resolves with the exit code (SIGKILL after 20 s). */
async function stopEntry(entry: Entry): Promise<number | null> {
  if (!entry.running()) return (await entry.ended).code;
  entry.child.kill('SIGTERM');
  const timer = setTimeout(() => entry.kill(), 20_000);
  const { code } = await entry.ended;
  clearTimeout(timer);
  return code;
}

/** Waits for "Nocturne is ready" and a 200 from /healthz, stops the process; 'ready' or what went wrong. */
async function readiness(entry: Entry, apiPort: number): Promise<string> {
  await waitFor(() => entry.logged(/Nocturne is ready/), { timeoutMs: START_TIMEOUT_MS, intervalMs: 20, stop: () => !entry.running() });
  const health = entry.running()
    ? await fetch(`http://127.0.0.1:${apiPort}/healthz`).then(
        (r) => r.status,
        () => 0,
      )
    : 0;
  const ready = entry.logged(/Nocturne is ready/) && health === 200;
  const code = await stopEntry(entry);
  const error = /Nocturne could not start: ([^\n]{0,300})/.exec(entry.stderr())?.[1];
  return ready && code === 0 ? 'ready' : `FAILED (exit ${code}${error ? `: ${error}` : ''})`;
}

describe('npm start migrating a SQLite file another process has open (chaos)', () => {
  const started = performance.now();
  const lines: string[] = [];
  let failed = false;

  afterAll(async () => {
    await stop();
    if (!failed) removeFolders();
    // eslint-disable-next-line no-console
    console.log(`migration lock (CHAOS_SEED=${seed}, ${elapsed(started)}):\n${lines.join('\n')}`);
  });

  async function readerThatCloses(): Promise<void> {
    const dir = tempDir('nocturne-migration-lock-');
    const file = path.join(dir, 'nocturne.db');
    const { env, apiPort } = await environment(dir);
    const reader = openReader(file);
    try {
      const entry = track(startEntry('src/main.ts', [], env));
      const opened = await waitFor(() => findFileHolders(file).some((h) => h.pid === entry.child.pid), {
        timeoutMs: START_TIMEOUT_MS,
        intervalMs: 20,
        stop: () => !entry.running(),
      });
      const heldFrom = performance.now();
      const released = waitFor(() => entry.logged(WAITING_LINE), { timeoutMs: START_TIMEOUT_MS, intervalMs: 20, stop: () => !entry.running() }).then(
        (waited) => {
          reader.close();
          return waited;
        },
      );
      const outcome = await readiness(entry, apiPort);
      const waited = await released;
      lines.push(`reader held ${elapsed(heldFrom)} after npm start opened the file (seen: ${opened}, start said it waits: ${waited}): ${outcome}`);
      if (outcome !== 'ready') failed = true;
      expect(outcome).toBe('ready');
      expect(entry.logged(WAITING_LINE)).toBe(true);
    } finally {
      if (reader.open) reader.close();
    }
  }

  async function readerThatNeverCloses(): Promise<void> {
    const dir = tempDir('nocturne-migration-lock-');
    const file = path.join(dir, 'nocturne.db');
    const { env, apiPort } = await environment(dir);
    const reader = openReader(file);
    let entry: Entry;
    try {
      entry = track(startEntry('src/main.ts', [], env));
      const { code } = await entry.ended;
      const error = `${/Nocturne could not start: ([^\n]*\n[^\n]*)/.exec(entry.stderr())?.[1] ?? entry.stderr().slice(-600)}`;
      lines.push(`reader never closes: exit ${code}: ${error}`);
      if (code === 0) failed = true;
      expect(code).toBe(1);
      expect(error).not.toMatch(/WASM_ERROR|SocketTimeout|External error/);
      expect(error).toMatch(/locked by another process/);
      expect(error).toContain(`pid ${process.pid}`);
      // Our own start-up connections (the first client, the checkpoint thread) are closed before migrating.
      expect(error).not.toMatch(/this process/);
    } finally {
      reader.close();
    }
    const restart = track(startEntry('src/main.ts', [], env));
    const outcome = await readiness(restart, apiPort);
    lines.push(`after the reader closed: ${outcome}`);
    if (outcome !== 'ready') failed = true;
    expect(outcome).toBe('ready');
  }

  async function killsDuringTheFirstMigration(): Promise<void> {
    const rng = phaseRng(0x3e5);
    const outcomes: string[] = [];
    for (let trial = 1; trial <= KILL_TRIALS; trial++) {
      const dir = tempDir('nocturne-migration-lock-');
      const dbFile = path.join(dir, 'nocturne.db');
      const { env, apiPort } = await environment(dir);
      const first = track(startEntry('src/main.ts', [], env));
      // The engine's exclusive connection keeps no shared-memory file: the WAL growing without one
      // is the engine writing.
      await waitFor(() => (fileSize(`${dbFile}-wal`) > 0 && !fs.existsSync(`${dbFile}-shm`)) || !first.running(), {
        timeoutMs: START_TIMEOUT_MS,
        intervalMs: 1,
      });
      const delay = rng.int(MAX_KILL_DELAY_MS);
      await new Promise((resolve) => setTimeout(resolve, delay));
      const killed = first.kill();
      await first.ended;
      const outcome = await readiness(track(startEntry('src/main.ts', [], env)), apiPort);
      outcomes.push(outcome);
      lines.push(`kill trial ${trial}: killed ${killed ? `at first write+${delay}ms` : 'too late (the start had ended)'}; first restart ${outcome}`);
      if (outcome !== 'ready') failed = true;
    }
    expect(outcomes.filter((o) => o !== 'ready')).toEqual([]);
  }

  // The three run side by side from the start; each test waits for its own.
  const runs: Partial<Record<'closes' | 'neverCloses' | 'kills', () => Promise<void>>> = {};
  beforeAll(() => {
    runs.closes = startNow(readerThatCloses);
    runs.neverCloses = startNow(readerThatNeverCloses);
    runs.kills = startNow(killsDuringTheFirstMigration);
  });

  it('waits for a reader that closes the file past the busy timeout, then becomes ready', () => runs.closes!(), 300_000);
  it('tells which process locks the file when the reader never closes it, and starts once it has', () => runs.neverCloses!(), 300_000);
  it('the first restart after a kill during the first migration becomes ready', () => runs.kills!(), 900_000);
});
