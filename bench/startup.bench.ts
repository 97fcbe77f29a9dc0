/**
 * Start-up of the entry points, as the tests pay it (they start the CLI and `npm start` as child
 * processes hundreds of times): `npm run -s bench:startup`. dist/ is built first (scripts/build.cjs);
 * each command runs as `npm run cli` runs it (node on dist/), once to warm the caches, then RUNS
 * times; the figures are medians of the wall time and of the CPU time (user + system, all threads)
 * of the process. `npm start` is measured until /healthz answers (admin API
 * on, Telegram and the terminal off), its CPU read from /proc at that moment (Linux).
 * The CLI runs on one migrated, empty SQLite store. See docs/architecture.md, "Start-up".
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const RUNS = 5;
const POLL_MS = 10;
const CLI_COMMANDS: readonly (readonly string[])[] = [
  ['--help'],
  ['scopes', '--json'],
  ['memories', '--scope', 'x', '--json'],
  ['forget', '--help'],
  ['export', '--help'],
];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-startup-'));
/** Written by each CLI process as it exits: its own CPU time, all threads. */
const CPU_PRELOAD = path.join(work, 'cpu-preload.js');
fs.writeFileSync(
  CPU_PRELOAD,
  "process.on('exit', () => { const u = process.cpuUsage(); require('node:fs').writeFileSync(process.env.STARTUP_CPU_FILE, String((u.user + u.system) / 1e6)); });\n",
);
const env = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', LOG_FORMAT: 'json', DATA_DIR: path.join(work, 'data') };

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function runCli(args: readonly string[]): Promise<{ wall: number; cpu: number }> {
  const cpuFile = path.join(work, 'cpu.txt');
  const started = performance.now();
  const child = spawn(process.execPath, ['--require', CPU_PRELOAD, 'dist/cli/index.js', ...args], {
    cwd: ROOT,
    env: { ...env, STARTUP_CPU_FILE: cpuFile },
    stdio: 'ignore',
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => resolve({ wall: (performance.now() - started) / 1000, cpu: Number(fs.readFileSync(cpuFile, 'utf8')) }));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** User + system seconds of a running process, all its threads (Linux /proc). */
function procCpu(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticksPerSecond = 100; // the kernel's USER_HZ, 100 on Linux
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

async function startService(): Promise<{ wall: number; cpu: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { ...env, ADMIN_TOKEN: 'startup-bench-admin-token', API_PORT: String(port), TERMINAL: 'off' },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('close', resolve));
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error('npm start exited before /healthz answered');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const result = { wall: (performance.now() - started) / 1000, cpu: procCpu(child.pid!) };
  child.kill('SIGTERM');
  await exited;
  return result;
}

async function measure(label: string, once: () => Promise<{ wall: number; cpu: number }>): Promise<void> {
  await once();
  const runs: { wall: number; cpu: number }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  const wall = median(runs.map((r) => r.wall));
  const cpu = median(runs.map((r) => r.cpu));
  console.log(`${label.padEnd(30)} wall ${wall.toFixed(2)} s   cpu ${cpu.toFixed(2)} s`);
}

async function main(): Promise<void> {
  require('../scripts/build.cjs').buildDist();
  console.log(`median of ${RUNS} (warm), load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`);
  await runCli(['scopes', '--json']); // migrates the store once: the runs below open a current one
  for (const args of CLI_COMMANDS) await measure(`cli ${args.join(' ')}`, () => runCli(args));
  if (fs.existsSync('/proc/self/stat')) await measure('npm start until /healthz', startService);
  fs.rmSync(work, { recursive: true, force: true });
}

void main();
