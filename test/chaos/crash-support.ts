/**
 * What the crash-safety chaos tests share: Nocturne's real entry points run as child processes
 * (node with tsx as a loader, as test/support/run-process.ts does: the tsx CLI would run the
 * script in a grandchild that a SIGKILL of the wrapper does not reach), killed with SIGKILL at
 * chosen moments; waiting for a condition; trials per phase from CHAOS_TRIALS; and the printed
 * table of trials, kill points and outcomes.
 */
import { expect } from '@jest/globals';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { tempDir as newTempDir } from '../support/databases';
import { startEntry, type Entry } from '../support/run-process';
import { createRng, type Rng } from './chaos-support';

export { startEntry, type Entry };

/** The CLI (`npm run cli -- ...`). */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv): Entry {
  return startEntry('src/cli/index.ts', args, env);
}

/** Runs the CLI to its end; throws with its output when the exit code is not the expected one. */
export async function runCliToEnd(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  expectCode: number | ((code: number | null) => boolean) = 0,
): Promise<Entry> {
  const entry = startCli(args, env);
  const { code } = await entry.ended;
  const ok = typeof expectCode === 'function' ? expectCode(code) : code === expectCode;
  if (!ok) throw new Error(`npm run cli -- ${args.join(' ')} exited with ${code}:\n${entry.stdout()}\n${entry.stderr()}`);
  return entry;
}

/** Resolves true as soon as `condition` holds (polled), false after `timeoutMs` or once `stop` says so. */
export async function waitFor(condition: () => boolean, options: { timeoutMs: number; intervalMs?: number; stop?: () => boolean }): Promise<boolean> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    if (condition()) return true;
    if (performance.now() > deadline || options.stop?.()) return condition();
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 5));
  }
}

export const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Trials per phase: CHAOS_TRIALS when set, else the phase's default. */
export function trialsPerPhase(defaultTrials: number): number {
  const given = Number(process.env.CHAOS_TRIALS);
  return Number.isInteger(given) && given > 0 ? given : defaultTrials;
}

/** One kill of one phase, for the printed table. */
export interface TrialRecord {
  readonly phase: string;
  readonly trial: number;
  /** Where the kill was aimed: the event it followed and the delay after it. */
  readonly killPoint: string;
  /** Whether the process was still running when the kill came (else it had finished first). */
  readonly killed: boolean;
  /** What was found after the kill (and after the restart). */
  readonly state: string;
  readonly lost: number;
  readonly halfApplied: number;
  readonly resumed: boolean;
}

/** The table of trials: one line per phase with its kill points and outcomes, then the total. */
export function trialTable(title: string, records: readonly TrialRecord[]): string {
  const phases = [...new Set(records.map((r) => r.phase))];
  const lines = [
    title,
    `${'phase'.padEnd(22)} ${'trials'.padStart(6)} ${'killed'.padStart(6)} ${'lost'.padStart(5)} ${'half'.padStart(5)} ${'resumed'.padStart(8)}  kill points -> state`,
  ];
  for (const phase of phases) {
    const rows = records.filter((r) => r.phase === phase);
    lines.push(
      `${phase.padEnd(22)} ${String(rows.length).padStart(6)} ${String(rows.filter((r) => r.killed).length).padStart(6)} ${String(rows.reduce((n, r) => n + r.lost, 0)).padStart(5)} ${String(rows.reduce((n, r) => n + r.halfApplied, 0)).padStart(5)} ${`${rows.filter((r) => r.resumed).length}/${rows.length}`.padStart(8)}  ` +
        rows.map((r) => `${r.killPoint}${r.killed ? '' : ' (finished first)'} -> ${r.state}`).join('; '),
    );
  }
  lines.push(
    `${'total'.padEnd(22)} ${String(records.length).padStart(6)} ${String(records.filter((r) => r.killed).length).padStart(6)} ${String(records.reduce((n, r) => n + r.lost, 0)).padStart(5)} ${String(records.reduce((n, r) => n + r.halfApplied, 0)).padStart(5)} ${`${records.filter((r) => r.resumed).length}/${records.length}`.padStart(8)}`,
  );
  return lines.join('\n');
}

/** A connection to a SQLite file the children use (read after they ended, or next to them). */
export function openSqlite(file: string, options: { readonly?: boolean } = {}): Database.Database {
  const db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: true, timeout: 10_000 });
  return db;
}

/** Reads one number from a query (COUNT(*) and the like). */
export function scalar(db: Database.Database, sql: string, ...params: unknown[]): number {
  const row = db
    .prepare(sql)
    .raw()
    .get(...params) as unknown[] | undefined;
  return Number(row?.[0] ?? 0);
}

/** The size of a file, 0 when it does not exist. */
export function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * The peak resident memory of a running process so far (VmHWM, Linux), polled until it ends;
 * undefined where /proc is not available.
 */
export function watchPeakMemory(entry: Entry): () => number | undefined {
  let peak: number | undefined;
  const read = () => {
    try {
      const status = fs.readFileSync(`/proc/${entry.child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
      if (Number.isFinite(kb)) peak = Math.max(peak ?? 0, kb * 1024);
    } catch {
      // ended, or no /proc
    }
  };
  const timer = setInterval(read, 10);
  void entry.ended.then(() => clearInterval(timer));
  return () => peak;
}

/**
 * The bookkeeping of one crash-safety test file: the child processes it started (so none
 * outlives it), its data folders (removed at the end unless a phase failed, to look at), each
 * phase's own random sequence from the file's seed (phases running side by side stay
 * reproducible), and the common moves of a trial.
 */
export interface CrashTrials {
  /** A new data folder of this file. */
  tempDir(prefix: string): string;
  /** Registers a started child; once the file is stopping, kills it and throws instead. */
  track(entry: Entry): Entry;
  /** A phase's own random sequence (`salt` tells the phases apart). */
  phaseRng(salt: number): Rng;
  /** Waits up to `ms` for the process to end by itself, then kills it; true when it was killed. */
  killAfter(entry: Entry, ms: number): Promise<boolean>;
  /** Marks every kill so far as resumed: a later run of the same work got past it (or finished it). */
  markResumed(records: TrialRecord[]): void;
  /** Stops the file: no new trial starts, what still runs is killed and waited for. */
  stop(): Promise<void>;
  /** Removes the data folders (not done when a phase failed: they are kept to look at). */
  removeFolders(): void;
}

export function createCrashTrials(seed: number): CrashTrials {
  const entries: Entry[] = [];
  const folders: string[] = [];
  let stopping = false;
  return {
    tempDir(prefix) {
      const dir = newTempDir(prefix);
      folders.push(dir);
      return dir;
    },
    track(entry) {
      entries.push(entry);
      // The file is ending (a phase timed out): no new trial runs on.
      if (stopping) {
        entry.kill();
        throw new Error('the test file is stopping');
      }
      return entry;
    },
    phaseRng: (salt) => createRng((seed ^ salt) >>> 0),
    async killAfter(entry, ms) {
      await waitFor(() => !entry.running(), { timeoutMs: ms });
      return entry.kill();
    },
    markResumed(records) {
      for (let i = 0; i < records.length; i++) if (!records[i]!.resumed) records[i] = { ...records[i]!, resumed: true };
    },
    async stop() {
      stopping = true;
      for (const entry of entries) entry.kill();
      await Promise.allSettled(entries.map((e) => e.ended));
    },
    removeFolders() {
      for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * What every crash phase must show: its trials all ran, nothing was lost or applied by halves,
 * every kill was resumed, and most kills landed while the process ran (or the phase proved little).
 */
export function expectPhaseSound(records: readonly TrialRecord[], trials: number): void {
  expect(records.length).toBe(trials);
  expect(records.reduce((n, r) => n + r.lost, 0)).toBe(0);
  expect(records.reduce((n, r) => n + r.halfApplied, 0)).toBe(0);
  expect(records.every((r) => r.resumed)).toBe(true);
  expect(records.filter((r) => r.killed).length).toBeGreaterThanOrEqual(Math.ceil(records.length / 2));
}

/**
 * Starts `work` now; what it returns is what its test calls to wait for it (rethrowing what it
 * threw). Work started from beforeAll runs side by side, each test reading its own outcome. Not
 * `it.concurrent`: Jest takes the file for "between tests" as soon as one concurrent test ends,
 * and a module another one loads after that (better-sqlite3's native part, say) throws.
 */
export function startNow(work: () => Promise<void>): () => Promise<void> {
  const outcome = work().then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  return async () => {
    const settled = await outcome;
    if (!settled.ok) throw settled.error;
  };
}

/** A phase's outcome, kept until its test reads it (phases run side by side from beforeAll). */
export type Settled = { ok: true; records: TrialRecord[] } | { ok: false; error: unknown };

export function settle(work: Promise<TrialRecord[]>): Promise<Settled> {
  return work.then(
    (records) => ({ ok: true as const, records }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}
