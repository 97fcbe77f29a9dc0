/**
 * Lock waits do not stop the process. `npm start` runs as a child process (webhook channel with
 * the Anthropic SDK against the loopback double, admin API) while other processes take locks on
 * its SQLite files, and a prober of its own polls /healthz every 100 ms, beside an idle control
 * process whose answers measure the machine's own delay:
 *
 * 1. an outside process holds the write lock of nocturne.db (`BEGIN IMMEDIATE`) for
 *    {@link HOLD_MS}: a webhook message sent meanwhile is answered once the lock is free, and every
 *    /healthz answers within 1 s;
 * 2. an outside process holds read transactions on nocturne.db and vectors.db while a memory is
 *    forgotten through the admin API (whose checkpoints wait for every reader to leave the
 *    write-ahead logs): the forget answers after the readers leave, /healthz within 1 s;
 * 3. `npm run cli -- import` of {@link IMPORT_LINES} lines runs beside the service, as the README
 *    tells a person to do: /healthz answers within 1 s and nine in ten webhook replies sent
 *    throughout take at most {@link MAX_REPLY_P90_DURING_IMPORT_MS}.
 *
 * The log prints the worst health latency and reply times of each phase.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { signRequest } from '../../src/channels/webhook/signature';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { migratedDataDir, tempDir } from '../support/databases';
import { exportEpisode, exportMemory, exportTime } from '../support/export-rows';
import { ROOT, runTs } from '../support/run-process';
import { startNocturne, type RunningNocturne } from '../support/service-harness';
import { routeHealth, startHealthProber, type HealthProber } from '../support/health-prober';

/**
 * How long the outside process keeps its lock: four times the health bound, so an event loop that
 * slept in the lock wait would show a /healthz answer of ~4 s, far past it.
 */
const HOLD_MS = 4_000;
/**
 * The bound on any /healthz answer, with any lock held anywhere: the service's own share of it,
 * less the delay an idle process saw at the same moment (test/support/health-prober.ts).
 */
const MAX_HEALTH_MS = 1_000;
/** Lines of the CLI import (the size in the report). */
const IMPORT_LINES = 20_000;
/**
 * The bound on nine replies in ten while the CLI imports: each write of a reply waits for the
 * import's current batch at most (a fraction of a second), never for the rest of the import.
 * Measured on a loaded 2-core machine (load average 8-25): p90 0.8-1.3 s, against 0.1-1.0 s with
 * no import; while the import kept the lock to itself, one reply in five took 3.4-5.8 s. The
 * worst single reply is printed, not bounded: a process starved of CPU makes it noise.
 */
const MAX_REPLY_P90_DURING_IMPORT_MS = 2_500;

const WEBHOOK_SECRET = 'whk-locks-0123456789abcdef';
const ADMIN_TOKEN = 'adm-locks-0123456789abcdef';

/**
 * Another process on the files: takes a write lock ('write': BEGIN IMMEDIATE) or a read
 * transaction ('read') on each file, says "held", keeps them for the given milliseconds, ends them.
 */
const HOLDER = `
const Database = require('better-sqlite3');
const [mode, ms, ...files] = process.argv.slice(1);
const dbs = files.map((file) => new Database(file, { fileMustExist: true, timeout: 10000 }));
for (const db of dbs) {
  if (mode === 'write') db.prepare('BEGIN IMMEDIATE').run();
  else { db.prepare('BEGIN').run(); db.prepare('SELECT count(*) FROM sqlite_master').get(); }
}
process.stdout.write('held\\n');
setTimeout(() => {
  for (const db of dbs) { db.prepare('COMMIT').run(); db.close(); }
  process.stdout.write('released\\n');
  process.exit(0);
}, Number(ms));
`;

/** Starts a lock holder and resolves once it holds its locks; `released` resolves when it let go. */
async function holdLocks(mode: 'write' | 'read', ms: number, files: string[]): Promise<{ child: ChildProcess; released: Promise<number> }> {
  const child = spawn(process.execPath, ['-e', HOLDER, mode, String(ms), ...files], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let resolveReleased: (at: number) => void = () => undefined;
  const released = new Promise<number>((resolve) => (resolveReleased = resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('held')) resolve();
      if (out.includes('released')) resolveReleased(Date.now());
    });
    child.on('close', (code) => {
      if (!out.includes('held')) reject(new Error(`the lock holder exited with ${code} before holding its locks`));
    });
  });
  return { child, released };
}

describe('lock waits do not stop the process (chaos)', () => {
  const dataDir = migratedDataDir(path.join(tempDir('nocturne-chaos-locks-'), 'data'));
  const databaseFile = path.join(dataDir, 'nocturne.db');
  const vectorsFile = path.join(dataDir, 'vectors.db');
  const figures: Record<string, string> = {};
  let double: AnthropicDouble;
  let service: RunningNocturne | undefined;
  let prober: HealthProber;
  let api = '';
  let webhook = '';
  let env: NodeJS.ProcessEnv;
  let messages = 0;

  /** Sends a signed webhook message; resolves with how long the reply took. */
  const reply = async (user: string): Promise<number> => {
    const body = JSON.stringify({ user, text: `a note about the harbor, number ${(messages += 1)}` });
    const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body });
    const started = Date.now();
    const response = await fetch(`${webhook}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(120_000),
    });
    const text = await response.text();
    if (response.status !== 200 || !text.includes('"reply"')) throw new Error(`webhook answered ${response.status}: ${text.slice(0, 300)}`);
    return Date.now() - started;
  };
  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${api}${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    // No embedding model to load (the harness's closed Ollama address): the vector index is still
    // opened, and searches go by keyword.
    service = await startNocturne({ dataDir, webhookSecret: WEBHOOK_SECRET, anthropic: { use: double }, env: { ADMIN_TOKEN } });
    env = service.env;
    api = service.apiBase;
    webhook = service.webhookBase!;
    prober = startHealthProber(api);
    // Warm up the reply path (first model call, first scope).
    await reply('warmup');
  }, 300_000);

  afterAll(async () => {
    await prober?.stop().catch(() => undefined);
    await service?.stop();
    await double?.stop();
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`sqlite-locks: ${JSON.stringify(figures, null, 1)}`);
  });

  it('1: an outside write lock on nocturne.db delays the reply that needs it, and nothing else', async () => {
    const polls0 = Date.now();
    const holder = await holdLocks('write', HOLD_MS, [databaseFile]);
    const sent = Date.now();
    const took = await reply('locked-out');
    const released = await holder.released;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const health = routeHealth(await prober.stop(), '/healthz', polls0, Date.now());
    prober = startHealthProber(api);
    figures.writeLock = `reply ${took} ms (lock released ${released - sent} ms after sending); /healthz worst ${health.worst} ms (its own ${health.worstOwn} ms, the control's worst ${health.controlWorst} ms) over ${health.count} polls`;
    expect(health.allOk).toBe(true);
    expect(health.worstOwn).toBeLessThan(MAX_HEALTH_MS);
    // The reply waited for the lock, and came once it was free.
    expect(took).toBeGreaterThanOrEqual(released - sent - 200);
  }, 120_000);

  it('2: outside readers on both files during an admin-API forget delay the forget, and nothing else', async () => {
    const scopeId = 'scope-locks-forget';
    const doc = {
      format: 'nocturne.scope-export',
      version: 1,
      scope: {
        id: scopeId,
        key: 'import:locks-forget',
        channel: 'import',
        kind: 'private',
        title: null,
        ownerId: null,
        timezone: null,
        paused: false,
        settings: null,
        lastMessageAt: exportTime(3),
        createdAt: exportTime(0),
        updatedAt: exportTime(3),
      },
      profile: null,
      conversations: [],
      episodes: [0, 1, 2, 3].map((i) => exportEpisode(i, { id: `ep-lf-${i}`, content: `Ana keeps a copper lantern, note ${i}` })),
      memories: [0, 1, 2].map((i) =>
        exportMemory(i, { id: `mem-lf-${i}`, content: `Ana keeps a copper lantern number ${i}`, sourceEpisodeIds: [`ep-lf-${i}`] }),
      ),
      memoryLinks: [],
      entities: [],
      digests: [],
      sleepRuns: [],
      auditEvents: [],
    };
    const imported = await admin('POST', `/scopes/${scopeId}/import`, doc);
    expect(imported.status).toBe(201);
    const polls0 = Date.now();
    const holder = await holdLocks('read', HOLD_MS, [databaseFile, vectorsFile]);
    const sent = Date.now();
    const forgotten = await admin('DELETE', `/scopes/${scopeId}/memories/mem-lf-1`);
    const took = Date.now() - sent;
    const released = await holder.released;
    // A reply in another scope right after: nothing is left waiting.
    const after = await reply('after-forget');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const health = routeHealth(await prober.stop(), '/healthz', polls0, Date.now());
    prober = startHealthProber(api);
    figures.forgetWithReaders = `forget ${took} ms (readers left ${released - sent} ms after it was sent), status ${forgotten.status}; reply after ${after} ms; /healthz worst ${health.worst} ms (its own ${health.worstOwn} ms, the control's worst ${health.controlWorst} ms) over ${health.count} polls`;
    expect(forgotten.status).toBe(200);
    expect(forgotten.json).toMatchObject({ success: true, removed: 1 });
    expect(health.allOk).toBe(true);
    expect(health.worstOwn).toBeLessThan(MAX_HEALTH_MS);
  }, 120_000);

  it('3: `npm run cli -- import` of 20,000 lines beside the service: /healthz within 1 s, replies not held up by the import', async () => {
    const baseline: number[] = [];
    for (let i = 0; i < 3; i++) baseline.push(await reply('importer-baseline'));
    const file = path.join(path.dirname(dataDir), 'chats.jsonl');
    const words = ['river', 'lantern', 'orchard', 'violin', 'harbor', 'meadow', 'copper', 'thunder', 'saffron', 'glacier'];
    const lines = Array.from({ length: IMPORT_LINES }, (_, i) =>
      JSON.stringify({
        role: i % 2 === 0 ? 'user' : 'agent',
        content: `line ${i}: ${words[i % 10]} ${words[(i * 7) % 10]} ${words[(i * 3) % 10]} and a few more words to make it a message`,
        timestamp: exportTime(i),
      }),
    );
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const polls0 = Date.now();
    const importing = runTs('src/cli/index.ts', ['import', '--scope', 'import:bulk', file], env);
    let done = false;
    void importing.finally(() => (done = true));
    const during: number[] = [];
    while (!done) {
      during.push(await reply('importer'));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const result = await importing;
    const importEnded = Date.now();
    const health = routeHealth(await prober.stop(), '/healthz', polls0, importEnded);
    prober = startHealthProber(api);
    const sorted = [...during].sort((a, b) => a - b);
    const p90 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] ?? 0;
    figures.cliImport =
      `import ${((importEnded - polls0) / 1000).toFixed(1)} s (exit ${result.code}); replies before ${baseline.join('/')} ms, ` +
      `during: ${during.length}, median ${sorted[Math.floor(sorted.length / 2)]} ms, p90 ${p90} ms, worst ${sorted.at(-1)} ms; ` +
      `/healthz worst ${health.worst} ms (its own ${health.worstOwn} ms, the control's worst ${health.controlWorst} ms) over ${health.count} polls`;
    expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(new RegExp(`imported ${IMPORT_LINES}\\b`));
    expect(health.allOk).toBe(true);
    expect(health.worstOwn).toBeLessThan(MAX_HEALTH_MS);
    expect(during.length).toBeGreaterThan(0);
    expect(p90).toBeLessThan(MAX_REPLY_P90_DURING_IMPORT_MS);
  }, 300_000);
});
