/**
 * Runs Nocturne's real entry points (the CLI, npm start's main.ts) as child processes, the way a
 * person runs them (node on the built dist/), with a controlled environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

/**
 * How `npm start` and `npm run cli` run an entry point: node on its JavaScript in dist/ (built from
 * src/ by `npm run build`, which the test run's global setup does first), one process, so a signal
 * reaches the service directly. `src/x.ts` runs as `dist/x.js`; a script of the tests' own (under
 * test/) runs from its sources with tsx as a loader (not its CLI, which runs the script in a child
 * and SIGKILLs it when the child does not acknowledge a relayed signal within 60 ms).
 */
export function nodeArgs(script: string, args: readonly string[] = []): string[] {
  const built = /^src\/(.+)\.ts$/.exec(script);
  if (built) return [path.join(ROOT, 'dist', `${built[1]}.js`), ...args];
  return ['--import', 'tsx', path.join(ROOT, script), ...args];
}

/** An environment with nothing of the developer's Nocturne settings, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', LOG_FORMAT: 'json' };
  return { ...base, ...extra };
}

export interface ProcessResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `script` to its end; `input`, when given, is its whole stdin (then end of input). */
export function runTs(script: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd = ROOT, input?: string): Promise<ProcessResult> {
  return runCommand(process.execPath, nodeArgs(script, args), env, cwd, input);
}

/** Runs `command` (found on PATH, e.g. `npm`) to its end and collects what it printed. */
export function runCommand(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd = ROOT, input?: string): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) child.stdin!.end(input);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }));
  });
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<ProcessResult> {
  return runTs('src/cli/index.ts', args, env);
}

/**
 * How long a long-running entry point may take to say it is ready. A quiet machine needs 3-5 s; with
 * the cores shared by several test runs (load average 20) a start has taken over 30 s, so the bound
 * only catches a start that hangs.
 */
export const READY_TIMEOUT_MS = 120_000;

/** Starts a long-running entry point; resolves once a stderr line matches `ready`. */
export function startTs(
  script: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs(script), { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not become ready:\n${output}`));
    }, READY_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve({ child, output: () => output, exited });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      if (!ready.test(output)) reject(new Error(`${script} exited with ${code} before it was ready:\n${output}`));
    });
  });
}

/** A child process running one of Nocturne's entry points. */
export interface Entry {
  readonly child: ChildProcess;
  /** Milliseconds since the spawn. */
  age(): number;
  stdout(): string;
  stderr(): string;
  /** Whether a line of stderr (the JSON logs) matches. */
  logged(pattern: RegExp): boolean;
  /** Resolves when the process has ended (exit code, or the signal that ended it). */
  readonly ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  /** SIGKILL now (no-op when it already ended); returns whether it was still running. */
  kill(): boolean;
}

/** Runs `script` (relative to the repository) with `args` in a controlled environment. */
export function startEntry(script: string, args: readonly string[], env: NodeJS.ProcessEnv): Entry {
  const started = performance.now();
  const child = spawn(process.execPath, nodeArgs(script, args), { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let done = false;
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  return {
    child,
    age: () => performance.now() - started,
    stdout: () => out,
    stderr: () => err,
    logged: (pattern) => pattern.test(err),
    ended,
    running: () => !done && child.exitCode === null && child.signalCode === null,
    kill() {
      if (done || child.exitCode !== null || child.signalCode !== null) return false;
      return child.kill('SIGKILL');
    },
  };
}
