/**
 * A crowded store: `npm run bench:crowd` loads 1,000,000 episodes in 1,000 scopes (one of
 * 100,000, the rest between ~450 and ~1,350) through the episode service and the vector index,
 * then times `search()` exactly as the service runs it (query embedding, full-text and vector
 * candidates, neighbouring turns, scoring) for 100 LoCoMo questions in the scope nearest 1,000
 * episodes and in the one of 100,000, and reports the process's RSS (peak and at the end).
 * SQLite first, then PostgreSQL (a server the benchmark starts in a temporary folder), each in a
 * child process of its own so each RSS is its own.
 *
 * The crowd copies real LoCoMo turns (`src/evaluation/crowd.ts`): 1,000 turns are
 * embedded with the configured embedder first (USE-lite by default), then every crowd episode is
 * one of their texts between other speakers with its vector plus noise.
 *
 * Size: `CROWD_EPISODES` (default 1,000,000), `CROWD_SCOPES` (1,000), `CROWD_LARGEST` (the large
 * scope, default a tenth of the episodes up to 100,000), `CROWD_DATABASES` (`sqlite,postgres`),
 * or the same as `--episodes N --scopes S --largest L --databases sqlite`. A run of 100,000 in 100
 * scopes takes a couple of minutes per database; 1,000,000 takes 10-20.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load-config';
import { createCore, type Core } from '../src/core';
import { createCrowdStore, readCrowdSources } from '../src/evaluation/crowd-store';
import { loadCrowd, planCrowdScopes, type CrowdScope } from '../src/evaluation/crowd';
import { loadLocomo } from '../src/evaluation/locomo';
import { createSilentLogger } from '../src/shared/logger';
import { startLocalPostgres, type LocalPostgres } from '../src/storage/local-postgres';

const DATA = process.env.LOCOMO_FILE ?? path.resolve(__dirname, '../../shared/datasets/locomo/locomo-dev.json');
const BASE_TURNS = 1_000;
const QUERIES = 100;
const WARM_UP = 5;
const SMALL_SCOPE = 1_000;
const LARGE_SCOPE_CAP = 100_000;
const RSS_SAMPLE_MS = 200;
const MIB = 2 ** 20;
const DATABASES = ['sqlite', 'postgres'] as const;
type BenchDatabase = (typeof DATABASES)[number];

interface Settings {
  readonly episodes: number;
  readonly scopes: number;
  readonly largest: number;
  readonly databases: BenchDatabase[];
  /** Set in the child process: the one database it measures. */
  readonly child: boolean;
}

interface SearchFigures {
  readonly size: number;
  readonly p50: number;
  readonly p95: number;
}

/** What one child measures, printed as its last stdout line. */
interface Figures {
  readonly database: BenchDatabase;
  readonly episodes: number;
  readonly scopes: number;
  readonly baseEmbedSeconds: number;
  readonly loadSeconds: number;
  readonly episodesPerSecond: number;
  readonly small: SearchFigures;
  readonly large: SearchFigures;
  readonly rssMiB: { readonly afterLoad: number; readonly peak: number; readonly end: number };
}

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      episodes: { type: 'string' },
      scopes: { type: 'string' },
      largest: { type: 'string' },
      databases: { type: 'string' },
      child: { type: 'boolean' },
    },
  });
  const number = (text: string | undefined, fallback: number) => (text === undefined ? fallback : Number(text.replace(/_/g, '')));
  const episodes = number(values.episodes ?? process.env.CROWD_EPISODES, 1_000_000);
  const scopes = number(values.scopes ?? process.env.CROWD_SCOPES, 1_000);
  const largest = number(values.largest ?? process.env.CROWD_LARGEST, Math.min(LARGE_SCOPE_CAP, Math.floor(episodes / 10)));
  const databases = (values.databases ?? process.env.CROWD_DATABASES ?? DATABASES.join(',')).split(',') as BenchDatabase[];
  if (![episodes, scopes, largest].every((n) => Number.isInteger(n) && n > 0) || scopes > episodes || largest > episodes) {
    throw new Error(`bad size: ${episodes} episodes, ${scopes} scopes, largest ${largest} (whole numbers, scopes <= episodes)`);
  }
  if (databases.some((d) => !DATABASES.includes(d))) throw new Error(`databases must be among ${DATABASES.join(', ')}`);
  return { episodes, scopes, largest, databases, child: values.child === true };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

const mib = (bytes: number) => Math.round(bytes / MIB);

/** RSS and what V8 knows of it, for the progress lines on stderr. */
function memoryNote(): string {
  const m = process.memoryUsage();
  return `RSS ${mib(m.rss)} MiB (JS heap ${mib(m.heapUsed)}/${mib(m.heapTotal)}, external ${mib(m.external)} MiB)`;
}

/** The highest RSS seen by sampling, and the kernel's own high-water mark. */
function watchRss(): { peak(): number; stop(): void } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, RSS_SAMPLE_MS);
  timer.unref();
  return {
    peak: () => Math.max(peak, process.memoryUsage().rss, process.resourceUsage().maxRSS * 1024),
    stop: () => clearInterval(timer),
  };
}

async function timeSearches(core: Core, scope: CrowdScope, questions: readonly string[]): Promise<SearchFigures> {
  for (const q of questions.slice(0, WARM_UP)) await core.search.search({ scopeId: scope.id, semanticQuery: q, limit: 10 });
  const times: number[] = [];
  for (const q of questions) {
    const started = performance.now();
    await core.search.search({ scopeId: scope.id, semanticQuery: q, limit: 10 });
    times.push(performance.now() - started);
  }
  return { size: scope.size, p50: percentile(times, 50), p95: percentile(times, 95) };
}

/** One database, in this process: load the crowd, time the searches, watch the RSS. */
async function measure(database: BenchDatabase, s: Settings): Promise<Figures> {
  const rss = watchRss();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-crowd-bench-'));
  let server: LocalPostgres | undefined;
  const env: Record<string, string> = { DATA_DIR: dir, LOG_LEVEL: 'error' };
  if (database === 'postgres') {
    server = await startLocalPostgres();
    Object.assign(env, { DB_PROVIDER: 'postgres', DATABASE_URL: await server.createDatabase('crowd_bench') });
  }
  const core = await createCore(loadConfig({ env, envFile: false }), createSilentLogger());
  console.error(`${database}: store open, ${memoryNote()}`);
  try {
    const conversations = loadLocomo(DATA);
    const turns = conversations.flatMap((c) => c.episodes).slice(0, BASE_TURNS);
    const questions = conversations
      .flatMap((c) => c.questions.map((q) => q.question))
      .filter((_, i) => i % 7 === 0)
      .slice(0, QUERIES);
    let started = performance.now();
    const base = await core.episodeService.ingestMany(
      { key: 'bench:base', channel: 'bench' },
      turns.map((t, i) =>
        core.episodeService.normalize(
          { content: t.content, author: t.author, externalId: `turn-${i}`, timestamp: t.timestamp.toISOString(), conversationId: t.conversationId },
          'bench',
        ),
      ),
    );
    await core.embeddingWorker.drain();
    const baseEmbedSeconds = (performance.now() - started) / 1000;
    console.error(`${database}: ${turns.length} real turns embedded in ${baseEmbedSeconds.toFixed(1)} s, ${memoryNote()}`);
    const sources = await readCrowdSources(core, [base.scope.id]);
    const sizes = planCrowdScopes({ episodes: s.episodes, scopes: s.scopes, largest: s.largest });
    let reported = 0;
    started = performance.now();
    const { report, scopes } = await loadCrowd({
      store: createCrowdStore(core),
      sources,
      sizes,
      onProgress: (done, total) => {
        if (done - reported < total / 20 && done < total) return;
        reported = done;
        const seconds = (performance.now() - started) / 1000;
        console.error(`${database}: ${done.toLocaleString('en')}/${total.toLocaleString('en')} episodes, ${Math.round(done / seconds)}/s, ${memoryNote()}`);
      },
    });
    const afterLoad = mib(process.memoryUsage().rss);
    const large = scopes[0]!;
    const small = scopes
      .slice(1)
      .reduce((best, scope) => (Math.abs(scope.size - SMALL_SCOPE) < Math.abs(best.size - SMALL_SCOPE) ? scope : best), scopes.at(-1)!);
    const smallFigures = await timeSearches(core, small, questions);
    const largeFigures = await timeSearches(core, large, questions);
    console.error(`${database}: searches done, ${memoryNote()}`);
    return {
      database,
      episodes: report.episodes,
      scopes: report.scopes,
      baseEmbedSeconds: Math.round(baseEmbedSeconds * 10) / 10,
      loadSeconds: report.loadSeconds,
      episodesPerSecond: report.episodesPerSecond,
      small: smallFigures,
      large: largeFigures,
      rssMiB: { afterLoad, peak: mib(rss.peak()), end: mib(process.memoryUsage().rss) },
    };
  } finally {
    rss.stop();
    await core.close();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs this file again for one database and returns what it printed last on stdout. */
function runChild(database: BenchDatabase, s: Settings): Promise<Figures> {
  const args = [
    '--import',
    'tsx',
    __filename,
    '--child',
    '--databases',
    database,
    '--episodes',
    String(s.episodes),
    '--scopes',
    String(s.scopes),
    '--largest',
    String(s.largest),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the ${database} run exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Figures);
    });
  });
}

function printTable(results: readonly Figures[]): void {
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const rows: string[][] = [
    ['', ...results.map((r) => r.database)],
    ['ingest (episodes/s)', ...results.map((r) => r.episodesPerSecond.toLocaleString('en'))],
    ['load time', ...results.map((r) => `${r.loadSeconds} s`)],
    ...(['small', 'large'] as const).flatMap((which) => [
      [`search p50, scope of ${results[0]![which].size.toLocaleString('en')}`, ...results.map((r) => ms(r[which].p50))],
      [`search p95, scope of ${results[0]![which].size.toLocaleString('en')}`, ...results.map((r) => ms(r[which].p95))],
    ]),
    ['RSS after the load', ...results.map((r) => `${r.rssMiB.afterLoad} MiB`)],
    ['RSS peak', ...results.map((r) => `${r.rssMiB.peak} MiB`)],
    ['RSS at the end', ...results.map((r) => `${r.rssMiB.end} MiB`)],
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c]!)).join('  '));
}

async function main(): Promise<void> {
  const s = settings();
  if (s.child) {
    console.log(JSON.stringify(await measure(s.databases[0]!, s)));
    return;
  }
  console.log(
    `crowd benchmark: ${s.episodes.toLocaleString('en')} episodes in ${s.scopes.toLocaleString('en')} scopes (largest ${s.largest.toLocaleString('en')}), ${os.cpus().length} cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const results: Figures[] = [];
  for (const database of s.databases) results.push(await runChild(database, s));
  printTable(results);
  console.log(JSON.stringify(results));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
