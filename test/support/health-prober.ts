/**
 * A supervisor's view of the running service: a process of its own polls its health routes every
 * 100 ms and records each answer's time, beside a control, an idle HTTP server in a further process
 * of its own polled the same way. On a machine whose cores are shared by several test runs, every
 * answer is late by however long the machine took to schedule the processes; the control's answers
 * measure that. What the service itself adds is an answer's time less the slowest control answer
 * that overlapped it: a service whose event loop waits on a lock stays slow however quiet the
 * machine, and the control stays fast beside it.
 */
import { spawn } from 'node:child_process';

/** Between two polls of a route. */
const POLL_INTERVAL_MS = 100;
/** An answer slower than this counts as a failure (nothing reasonable waits a minute). */
const POLL_TIMEOUT_MS = 60_000;

/** The control: answers 200 at once, prints its port. */
const CONTROL = `
const http = require('node:http');
const server = http.createServer((req, res) => res.end('ok'));
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
process.on('SIGTERM', () => process.exit(0));
`;

/** The prober: polls each route (and the control) until SIGTERM, then prints every poll. */
const PROBER = `
const { spawn } = require('node:child_process');
const [base, routes] = [process.argv[1], JSON.parse(process.argv[2])];
const polls = [];
let on = true;
const control = spawn(process.execPath, ['-e', ${JSON.stringify(CONTROL)}], { stdio: ['ignore', 'pipe', 'inherit'] });
const controlBase = new Promise((resolve) => {
  let out = '';
  control.stdout.on('data', (c) => { out += c; if (out.includes('\\n')) resolve('http://127.0.0.1:' + out.trim()); });
});
process.on('SIGTERM', () => { on = false; });
const poll = async (route, url) => {
  while (on) {
    const at = Date.now();
    let ok = true;
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(${POLL_TIMEOUT_MS}) });
      ok = r.status === 200;
      await r.text();
    } catch { ok = false; }
    polls.push({ route, at, ms: Date.now() - at, ok });
    await new Promise((r) => setTimeout(r, ${POLL_INTERVAL_MS}));
  }
};
controlBase.then((c) => Promise.all([poll('control', c + '/'), ...routes.map((r) => poll(r, base + r))])).then(() => {
  control.kill('SIGTERM');
  process.stdout.write(JSON.stringify(polls));
});
`;

export interface Poll {
  readonly route: string;
  /** When it was sent (epoch ms). */
  readonly at: number;
  readonly ms: number;
  readonly ok: boolean;
}

/** What the polls of one route in a window showed. */
export interface RouteHealth {
  readonly count: number;
  readonly allOk: boolean;
  /** The slowest answer as seen. */
  readonly worst: number;
  /** The slowest answer less the slowest control answer that overlapped it: the service's own share. */
  readonly worstOwn: number;
  /** The slowest control answer in the window: the machine's own delay. */
  readonly controlWorst: number;
}

export interface HealthProber {
  /** Stops polling; every poll made. */
  stop(): Promise<Poll[]>;
}

/** Starts polling `routes` (e.g. `/healthz`) of `base` (`http://127.0.0.1:<port>`). */
export function startHealthProber(base: string, routes: readonly string[] = ['/healthz']): HealthProber {
  const child = spawn(process.execPath, ['-e', PROBER, base, JSON.stringify(routes)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const closed = new Promise((resolve) => child.on('close', resolve));
  return {
    async stop() {
      child.kill('SIGTERM');
      await closed;
      return JSON.parse(out) as Poll[];
    },
  };
}

/** The health of `route` among the polls sent in [from, to] (epoch ms; the whole run by default). */
export function routeHealth(polls: readonly Poll[], route: string, from = 0, to = Number.POSITIVE_INFINITY): RouteHealth {
  const inside = polls.filter((p) => p.route === route && p.at >= from && p.at <= to);
  const control = polls.filter((p) => p.route === 'control');
  const overlapping = (p: Poll) => control.filter((c) => c.at < p.at + p.ms && c.at + c.ms > p.at).reduce((worst, c) => Math.max(worst, c.ms), 0);
  return {
    count: inside.length,
    allOk: inside.every((p) => p.ok),
    worst: Math.max(0, ...inside.map((p) => p.ms)),
    worstOwn: Math.max(0, ...inside.map((p) => p.ms - overlapping(p))),
    controlWorst: Math.max(0, ...control.filter((c) => c.at >= from && c.at <= to).map((c) => c.ms)),
  };
}
