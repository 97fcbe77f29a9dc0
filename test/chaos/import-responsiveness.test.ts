/**
 * Issue 16, item 5: a big admin import (`POST /scopes/:id/import`) must not block the process,
 * nor take memory in proportion to the document. `npm start` runs as a child process with the
 * admin API; a generated export of ~60 MiB is posted while /healthz (and /readyz, which asks the
 * database) is polled every 100 ms. Every health answer comes within 1 s, the import stores every
 * row, and the service's peak resident memory grows by less than {@link MAX_RSS_GROWTH} over
 * what it had after start-up, whatever the export's size (the import that parsed the document
 * whole grew by 542 MiB with this export, 2026-11-25; the streamed one by about 280 MiB, most of
 * it the worker thread and the V8 heaps' slack, the same for 20 or 100 MiB). The log prints the worst health latency, the
 * import's duration and the peak resident memory.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { exportEpisode, exportMemory, exportTime } from '../support/export-rows';
import { cleanEnv, startTs } from '../support/run-process';
import { chaosSeed, createRng, freePort } from './chaos-support';

/** A valid scope export with `episodes` episodes of ~`bytes` characters each. */
function bigExport(seed: number, episodes: number, bytes: number): { doc: Record<string, unknown>; scopeId: string } {
  const rng = createRng(seed);
  const words = ['river', 'lantern', 'orchard', 'violin', 'harbor', 'meadow', 'copper', 'thunder', 'saffron', 'glacier', 'pebble', 'compass'];
  const scopeId = `scope-big-${seed}`;
  const at = exportTime;
  const rows = [];
  for (let i = 0; i < episodes; i++) {
    let content = `message ${i}:`;
    while (content.length < bytes) content += ` ${rng.pick(words)}`;
    rows.push(
      exportEpisode(i, {
        id: `ep-${String(i).padStart(8, '0')}`,
        role: i % 2 === 0 ? 'user' : 'agent',
        content,
        metadata: { topics: [rng.pick(words), rng.pick(words)], importance: 0.5 },
        tags: [{ kind: 'topic', value: rng.pick(words) }],
      }),
    );
  }
  const memories = Array.from({ length: 200 }, (_, i) =>
    exportMemory(i, {
      id: `mem-${String(i).padStart(6, '0')}`,
      content: `Ana likes ${rng.pick(words)} number ${i}`,
      sourceEpisodeIds: [`ep-${String(i * 2).padStart(8, '0')}`],
    }),
  );
  const doc = {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: scopeId,
      key: `import:big-${seed}`,
      channel: 'import',
      kind: 'private',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: null,
      lastMessageAt: at(episodes),
      createdAt: at(0),
      updatedAt: at(episodes),
    },
    profile: null,
    conversations: [],
    episodes: rows,
    memories,
    memoryLinks: [],
    entities: [],
    digests: [],
    sleepRuns: [],
    auditEvents: [],
  };
  return { doc, scopeId };
}

/** Reads the peak resident memory (VmHWM) of a process, in bytes. */
function peakRss(pid: number): number | undefined {
  try {
    const kb = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? kb * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The prober: polls /healthz and /readyz every 100 ms until SIGTERM, then prints what it saw. */
const PROBER = `
const api = process.argv[1];
const latencies = { healthz: [], readyz: [] }, failures = [], slow = [];
const t0 = performance.now();
let on = true;
process.on('SIGTERM', () => { on = false; });
const poll = async (route) => {
  while (on) {
    const started = performance.now();
    try {
      const r = await fetch(api + '/' + route, { signal: AbortSignal.timeout(60000) });
      if (r.status !== 200) failures.push(route + ' ' + r.status);
      await r.text();
    } catch (e) { failures.push(route + ' ' + e.message); }
    const ms = performance.now() - started;
    latencies[route].push(ms);
    if (ms > 300) slow.push(route + ' ' + ms.toFixed(0) + ' ms at ' + ((started - t0) / 1000 - 0.5).toFixed(1) + ' s');
    await new Promise((r) => setTimeout(r, 100));
  }
};
Promise.all([poll('healthz'), poll('readyz')]).then(() => process.stdout.write(JSON.stringify({ latencies, failures, slow })));
`;

/** How much the service's peak resident memory may grow during the import. */
const MAX_RSS_GROWTH = 400 * 1024 * 1024;

const mib = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`);

describe('a big admin import keeps the service answering (issue 16, item 5)', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('answers /healthz and /readyz within 1 s, and grows by less than 400 MiB, while a ~60 MiB export is imported', async () => {
    const seed = chaosSeed('import-responsiveness');
    const episodes = Number(process.env.IMPORT_EPISODES ?? 45_000);
    // Only the bytes are kept: a garbage collection of the document in this process would show as
    // the service's latency.
    const { body, scopeId } = (() => {
      const { doc, scopeId } = bigExport(seed, episodes, 640);
      return { body: Buffer.from(JSON.stringify(doc, null, 2)), scopeId };
    })();
    (globalThis as { gc?: () => void }).gc?.();
    const dataDir = path.join(tempDir(), 'data');
    const port = await freePort();
    const token = 'admin-token-import-responsiveness';
    const service = await startTs(
      'src/main.ts',
      cleanEnv({
        DATA_DIR: dataDir,
        ADMIN_TOKEN: token,
        API_PORT: String(port),
        SLEEP_ENABLED: 'false',
        EMBEDDER: 'ollama',
        OLLAMA_HOST: 'http://127.0.0.1:9',
      }),
      /Nocturne is ready/,
    );
    stops.push(async () => {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await service.exited;
    });
    const pid = service.child.pid!;
    const baseRss = peakRss(pid);
    const api = `http://127.0.0.1:${port}`;

    // The health checks run in a process of their own, like a supervisor's: this test process
    // sends 60 MiB and would otherwise count its own pauses as the service's.
    const prober = spawn(process.execPath, ['-e', PROBER, api], { stdio: ['ignore', 'pipe', 'inherit'] });
    let probes = '';
    prober.stdout!.on('data', (chunk: Buffer) => (probes += chunk.toString()));
    const proberDone = new Promise((resolve) => prober.on('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    const response = await fetch(`${api}/scopes/${scopeId}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(600_000),
    });
    const answer = (await response.json()) as { counts?: { episodes: number; memories: number; episodeTags: number } };
    const took = performance.now() - started;
    prober.kill('SIGTERM');
    await proberDone;
    const { latencies, failures, slow } = JSON.parse(probes) as { latencies: Record<string, number[]>; failures: string[]; slow: string[] };

    const worst = (route: string) => Math.max(...latencies[route]!);
    const peak = peakRss(pid);
    // eslint-disable-next-line no-console
    console.log(
      `import-responsiveness: ${(body.length / 1024 / 1024).toFixed(1)} MiB export, ${episodes} episodes, import ${(took / 1000).toFixed(1)} s (status ${response.status}); ` +
        `/healthz max ${worst('healthz').toFixed(0)} ms over ${latencies.healthz!.length} polls, /readyz max ${worst('readyz').toFixed(0)} ms over ${latencies.readyz!.length}; ` +
        `peak RSS ${mib(peak)} (after start-up ${mib(baseRss)}, growth ${mib(peak! - baseRss!)}); answers over 300 ms: ${slow.join(', ') || 'none'}`,
    );
    expect(response.status).toBe(201);
    expect(answer.counts).toMatchObject({ episodes, memories: 200, episodeTags: episodes });
    expect(failures).toEqual([]);
    expect(worst('healthz')).toBeLessThan(1_000);
    expect(worst('readyz')).toBeLessThan(1_000);
    expect(peak! - baseRss!).toBeLessThan(MAX_RSS_GROWTH);

    // The rows are really there: the scope's episodes page answers with the last of them.
    const scopes = (await (await fetch(`${api}/scopes`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      scopes: Array<{ id: string; episodeCount?: number }>;
    };
    expect(scopes.scopes.map((s) => s.id)).toContain(scopeId);

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  }, 600_000);
});
