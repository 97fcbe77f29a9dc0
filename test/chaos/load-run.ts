/**
 * A load run of the composed service (src/service.ts, as `npm start` runs it) in this process:
 * Telegram against the fake Bot API, the Anthropic SDK against a loopback model, a temporary
 * SQLite store, the terminal off, sleep on or off. The world (fake Bot API, model doubles, the
 * people sending messages, the reply bookkeeping) runs in a child process (load-world.ts), so the
 * memory figures taken here are the service's.
 *
 * Every `sampleEveryMs` the run forces a garbage collection (when it can: `--expose-gc`, else
 * `v8.setFlagsFromString('--expose-gc')`, which works in a running Node 20 process) and samples RSS
 * and the V8 heap, and asks the world for replies and latency. Used by bench/load.bench.ts (minutes,
 * hundreds of chats, figures printed) and test/chaos/load.test.ts (30 s, asserted).
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { createLogger } from '../../src/shared/logger';
import { loadUserId, type LoadSpec, type WorldEvent, type WorldReport, type WorldRequest, type WorldStats } from './load-world';

export interface LoadOptions {
  readonly durationMs: number;
  readonly chats: number;
  /** Messages per second, all chats together. */
  readonly rate: number;
  /** Run the sleep scheduler, consolidating every minute (idle 0 minutes, 10 episodes). */
  readonly sleep: boolean;
  /** `local` (the in-process model, `npm start`'s default) or `ollama` (the loopback double: hashed vectors). */
  readonly embedder: 'local' | 'ollama';
  readonly sampleEveryMs: number;
  /** Samples before this are warm-up: growth is measured from the first sample at or after it. */
  readonly warmupMs: number;
  readonly seed: number;
  /** Where progress lines go. */
  readonly log: (line: string) => void;
}

export interface MemorySample {
  /** Milliseconds since the load started. */
  readonly atMs: number;
  readonly rssMb: number;
  /** V8 heap in use right after a forced collection (or as found, without one). */
  readonly heapMb: number;
  readonly externalMb: number;
  readonly stats: WorldStats;
}

export interface LoadResult {
  readonly options: LoadOptions;
  readonly gc: string;
  readonly before: { readonly rssMb: number; readonly heapMb: number };
  readonly samples: readonly MemorySample[];
  readonly after: { readonly rssMb: number; readonly heapMb: number };
  readonly report: WorldReport;
  readonly warmHeapMb: number;
  /** Least-squares slope of the post-warm-up heap samples, MB per minute. */
  readonly heapSlopeMbPerMin: number;
  readonly rssPeakMb: number;
  readonly sleepRuns: Readonly<Record<string, number>>;
  readonly episodes: number;
  readonly memories: number;
  readonly startMs: number;
  readonly stopMs: number;
}

const MB = 1024 * 1024;

/** A way to force a full garbage collection in this process, and how it was obtained. */
export function forcedGc(): { readonly gc?: () => void; readonly how: string } {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return { gc: exposed, how: 'global.gc (--expose-gc)' };
  try {
    v8.setFlagsFromString('--expose-gc');
    const fn = vm.runInNewContext('gc') as unknown;
    if (typeof fn === 'function') return { gc: fn as () => void, how: "v8.setFlagsFromString('--expose-gc') + vm.runInNewContext('gc')" };
  } catch {
    // Fall through: figures without a forced collection.
  }
  return { how: 'none: heap figures are as found, without a forced collection' };
}

function memory(gc: (() => void) | undefined): { rssMb: number; heapMb: number; externalMb: number } {
  if (gc) {
    gc();
    gc();
  }
  const usage = process.memoryUsage();
  return { rssMb: usage.rss / MB, heapMb: usage.heapUsed / MB, externalMb: usage.external / MB };
}

function slope(points: ReadonlyArray<{ x: number; y: number }>): number {
  if (points.length < 2) return 0;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

/** The world child process and a request/answer channel to it. */
async function startWorld(): Promise<{
  child: ChildProcess;
  ready: Extract<WorldEvent, { type: 'ready' }>;
  ask: <T extends WorldEvent>(request: WorldRequest & { id: number }) => Promise<T>;
  send: (request: WorldRequest) => void;
}> {
  const child = fork(path.join(__dirname, 'load-world.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, NOCTURNE_LOAD_WORLD: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    cwd: path.resolve(__dirname, '../..'),
  });
  const waiting = new Map<number, (event: WorldEvent) => void>();
  let failure: ((error: Error) => void) | undefined;
  const ready = await new Promise<Extract<WorldEvent, { type: 'ready' }>>((resolve, reject) => {
    failure = reject;
    child.on('message', (event: WorldEvent) => {
      if (event.type === 'ready') resolve(event);
      else if (event.type === 'error') failure?.(new Error(`load world: ${event.message}`));
      else waiting.get(event.id)?.(event);
    });
    child.once('exit', (code) => failure?.(new Error(`the load world exited (${code})`)));
  });
  return {
    child,
    ready,
    send: (request) => child.send(request),
    ask: <T extends WorldEvent>(request: WorldRequest & { id: number }) =>
      new Promise<T>((resolve, reject) => {
        failure = reject;
        waiting.set(request.id, (event) => {
          waiting.delete(request.id);
          resolve(event as T);
        });
        child.send(request);
      }),
  };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { gc, how } = forcedGc();
  const snapshots = process.env.NOCTURNE_LOAD_HEAP_SNAPSHOTS;
  const world = await startWorld();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-load-'));
  let service: RunningService | undefined;
  let requestId = 0;
  try {
    const userIds = Array.from({ length: options.chats }, (_, i) => loadUserId(i));
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        LOG_LEVEL: process.env.NOCTURNE_LOAD_LOG_LEVEL ?? 'warn',
        LOG_FORMAT: 'json',
        ANTHROPIC_API_KEY: 'sk-ant-load-0000000000000000',
        ANTHROPIC_BASE_URL: world.ready.anthropicUrl,
        TELEGRAM_BOT_TOKEN: world.ready.token,
        TELEGRAM_API_ROOT: world.ready.apiRoot,
        TELEGRAM_ALLOWED_USERS: userIds.join(','),
        TERMINAL: 'off',
        SLEEP_ENABLED: options.sleep ? 'true' : 'false',
        // The load measures what the pipeline carries; a person's reply limits have their own suite.
        REPLY_RATE_PER_MINUTE: '0',
        REPLY_DAILY_BUDGET: '0',
        SLEEP_CONSOLIDATE_CRON: '* * * * *',
        SLEEP_IDLE_MINUTES: '0',
        SLEEP_MIN_EPISODES: '10',
        SLEEP_WINDOW_HOURS: '24',
        DIGEST_TIME: '23:59',
        EMBEDDER: options.embedder,
        OLLAMA_HOST: world.ready.ollamaUrl,
      },
      envFile: false,
    });
    const logFile = path.join(dataDir, 'service.log');
    const logger = createLogger({ ...config.log, stream: fs.createWriteStream(logFile) });
    const started = performance.now();
    service = await startService(config, logger, { input: new PassThrough(), output: new PassThrough() });
    const startMs = performance.now() - started;
    const before = memory(gc);
    options.log(
      `service started in ${(startMs / 1000).toFixed(1)} s (${service.parts.telegram}); ${options.chats} chats, ${options.rate} msg/s for ${(options.durationMs / 60_000).toFixed(1)} min; sleep ${options.sleep ? 'on (every minute)' : 'off'}; embedder ${options.embedder}; GC: ${how}; logs: ${logFile}`,
    );
    options.log(`before load: RSS ${before.rssMb.toFixed(1)} MB, heap ${before.heapMb.toFixed(1)} MB`);

    const spec: LoadSpec = { chats: options.chats, rate: options.rate, durationMs: options.durationMs, seed: options.seed };
    world.send({ type: 'start', spec });
    const loadStart = performance.now();
    const samples: MemorySample[] = [];
    let rssPeakMb = before.rssMb;
    // RSS peaks between samples too.
    const peakTimer = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, process.memoryUsage().rss / MB)), 1_000);
    try {
      for (let next = options.sampleEveryMs; next <= options.durationMs; next += options.sampleEveryMs) {
        const wait = loadStart + next - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const { stats } = await world.ask<Extract<WorldEvent, { type: 'stats' }>>({ type: 'stats', id: ++requestId });
        const m = memory(gc);
        rssPeakMb = Math.max(rssPeakMb, m.rssMb);
        const sample: MemorySample = { atMs: performance.now() - loadStart, ...m, stats };
        samples.push(sample);
        // NOCTURNE_LOAD_HEAP_SNAPSHOTS=<dir>: heap snapshots after warm-up and at the end, to compare what grew.
        if (snapshots && samples.filter((s) => s.atMs >= options.warmupMs).length === 1) v8.writeHeapSnapshot(path.join(snapshots, 'warm.heapsnapshot'));
        options.log(
          `${(sample.atMs / 1000).toFixed(0).padStart(4)} s  sent ${String(stats.sent).padStart(5)}  answered ${String(stats.answered).padStart(5)}  ` +
            `latency p50 ${stats.window.p50} ms p95 ${stats.window.p95} ms  RSS ${m.rssMb.toFixed(1)} MB  heap ${m.heapMb.toFixed(1)} MB`,
        );
      }
    } finally {
      clearInterval(peakTimer);
    }
    const { report } = await world.ask<Extract<WorldEvent, { type: 'report' }>>({ type: 'drain', id: ++requestId, timeoutMs: 120_000 });
    const after = memory(gc);
    if (snapshots) v8.writeHeapSnapshot(path.join(snapshots, 'end.heapsnapshot'));
    const prisma = service.core.db.prisma;
    const runs = await prisma.sleepRun.groupBy({ by: ['kind', 'status'], _count: { _all: true } });
    const sleepRuns = Object.fromEntries(runs.map((r) => [`${r.kind} ${r.status}`, r._count._all]));
    const episodes = await prisma.episode.count();
    const memories = await prisma.memory.count();
    const stopping = performance.now();
    await service.stop();
    service = undefined;
    const stopMs = performance.now() - stopping;
    const warm = samples.find((s) => s.atMs >= options.warmupMs) ?? samples[0];
    const post = samples.filter((s) => s.atMs >= (warm?.atMs ?? 0));
    return {
      options,
      gc: how,
      before: { rssMb: before.rssMb, heapMb: before.heapMb },
      samples,
      after: { rssMb: after.rssMb, heapMb: after.heapMb },
      report,
      warmHeapMb: warm?.heapMb ?? before.heapMb,
      heapSlopeMbPerMin: slope(post.map((s) => ({ x: s.atMs / 60_000, y: s.heapMb }))),
      rssPeakMb,
      sleepRuns,
      episodes,
      memories,
      startMs,
      stopMs,
    };
  } finally {
    await service?.stop().catch(() => undefined);
    world.send({ type: 'stop' });
    await new Promise<void>((resolve) => {
      if (world.child.exitCode !== null) return resolve();
      const timer = setTimeout(() => (world.child.kill('SIGKILL'), resolve()), 5_000);
      world.child.once('exit', () => (clearTimeout(timer), resolve()));
    });
    if (process.env.NOCTURNE_LOAD_KEEP !== '1') fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The figures table printed at the end of a run. */
export function formatLoadResult(result: LoadResult): string {
  const r = result.report;
  const minutes = result.options.durationMs / 60_000;
  const lines: Array<[string, string]> = [
    ['duration, chats, rate', `${minutes.toFixed(1)} min, ${result.options.chats} chats, ${result.options.rate} msg/s (bursts of 1-3 per chat)`],
    ['messages sent', String(r.sent)],
    ['replies received', String(r.replies)],
    ['lost (never answered)', String(r.lost)],
    ['duplicated (answered twice)', String(r.duplicated)],
    [
      'order violations',
      `${r.orderViolations} (${r.chatsInOrder} of ${r.chats} chats fully in order; ${r.overlapping} messages sent while the chat's previous one was unanswered)`,
    ],
    [
      'other bot messages',
      Object.keys(r.other).length === 0
        ? 'none'
        : Object.entries(r.other)
            .map(([k, v]) => `"${k}" ${v}`)
            .join(', '),
    ],
    ['reply latency p50 / p95 / max', `${r.overall.p50} / ${r.overall.p95} / ${r.overall.max} ms`],
    ['RSS before / peak / end', `${result.before.rssMb.toFixed(1)} / ${result.rssPeakMb.toFixed(1)} / ${result.after.rssMb.toFixed(1)} MB`],
    [
      'heap before / after warm-up / end',
      `${result.before.heapMb.toFixed(1)} / ${result.warmHeapMb.toFixed(1)} / ${result.after.heapMb.toFixed(1)} MB (after forced GC)`,
    ],
    ['heap growth after warm-up', `${(result.after.heapMb - result.warmHeapMb).toFixed(2)} MB; slope ${result.heapSlopeMbPerMin.toFixed(2)} MB/min`],
    [
      'sleep runs',
      Object.keys(result.sleepRuns).length === 0
        ? 'none'
        : Object.entries(result.sleepRuns)
            .map(([k, v]) => `${k} ${v}`)
            .join(', '),
    ],
    ['stored', `${result.episodes} episodes, ${result.memories} memories`],
    [
      'Bot API calls',
      Object.entries(r.apiCalls)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    ],
    ['model requests', String(r.modelRequests)],
    ['service start / drain / stop', `${(result.startMs / 1000).toFixed(1)} s / ${(r.drainMs / 1000).toFixed(1)} s / ${(result.stopMs / 1000).toFixed(1)} s`],
    ['forced GC', result.gc],
  ];
  const width = Math.max(...lines.map(([k]) => k.length));
  return lines.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n');
}
