/**
 * Issue 16, item 5: a big admin import (`POST /scopes/:id/import`) must not block the process,
 * nor take memory in proportion to the document. `npm start` runs as a child process with the
 * admin API; a generated export of ~60 MiB is posted while /healthz (and /readyz, which asks the
 * database) is polled every 100 ms, beside an idle control process whose answers measure the
 * machine's own delay. Every health answer comes within 1 s of it, the import stores every
 * row, and the service's peak resident memory grows by less than {@link MAX_RSS_GROWTH} over
 * what it had after start-up, whatever the export's size (the import that parsed the document
 * whole grew by 542 MiB with this export, 2026-11-25; the streamed one by about 280 MiB, most of
 * it the worker thread and the V8 heaps' slack, the same for 20 or 100 MiB). The log prints the worst health latency, the
 * import's duration and the peak resident memory.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { exportEpisode, exportMemory, exportTime } from '../support/export-rows';
import { routeHealth, startHealthProber, type RouteHealth } from '../support/health-prober';
import { peakRss } from '../support/peak-rss';
import { startNocturne } from '../support/service-harness';
import { chaosSeed, createRng } from './chaos-support';

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

/**
 * The slowest health answer allowed while the import runs: the service's own share, less the
 * delay an idle control process saw at the same moment (test/support/health-prober.ts).
 */
const MAX_HEALTH_MS = 1_000;
/** Answers slower than this are listed in the log with their time. */
const SLOW_MS = 300;

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
    const service = await startNocturne();
    stops.push(() => service.kill());
    const pid = service.child.pid!;
    const baseRss = peakRss(pid);

    // The health checks run in a process of their own, like a supervisor's: this test process
    // sends 60 MiB and would otherwise count its own pauses as the service's.
    const prober = startHealthProber(service.apiBase, ['/healthz', '/readyz']);
    const t0 = Date.now() + 500;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    const response = await service.api(`/scopes/${scopeId}/import`, { method: 'POST', body, signal: AbortSignal.timeout(600_000) });
    const answer = (await response.json()) as { counts?: { episodes: number; memories: number; episodeTags: number } };
    const took = performance.now() - started;
    const polls = await prober.stop();
    const [healthz, readyz] = [routeHealth(polls, '/healthz'), routeHealth(polls, '/readyz')];
    const slow = polls
      .filter((p) => p.route !== 'control' && p.ms > SLOW_MS)
      .map((p) => `${p.route.slice(1)} ${p.ms} ms at ${((p.at - t0) / 1000).toFixed(1)} s`);
    const peak = peakRss(pid);
    const seen = (h: RouteHealth) => `max ${h.worst} ms (its own ${h.worstOwn} ms) over ${h.count} polls`;
    // eslint-disable-next-line no-console
    console.log(
      `import-responsiveness: ${(body.length / 1024 / 1024).toFixed(1)} MiB export, ${episodes} episodes, import ${(took / 1000).toFixed(1)} s (status ${response.status}); ` +
        `/healthz ${seen(healthz)}, /readyz ${seen(readyz)}, the control's worst ${healthz.controlWorst} ms; ` +
        `peak RSS ${mib(peak)} (after start-up ${mib(baseRss)}, growth ${mib(peak! - baseRss!)}); answers over ${SLOW_MS} ms: ${slow.join(', ') || 'none'}`,
    );
    expect(response.status).toBe(201);
    expect(answer.counts).toMatchObject({ episodes, memories: 200, episodeTags: episodes });
    expect(healthz.allOk && readyz.allOk).toBe(true);
    expect(healthz.worstOwn).toBeLessThan(MAX_HEALTH_MS);
    expect(readyz.worstOwn).toBeLessThan(MAX_HEALTH_MS);
    expect(peak! - baseRss!).toBeLessThan(MAX_RSS_GROWTH);

    // The rows are really there: the scope's episodes page answers with the last of them.
    const scopes = (await (await service.api('/scopes')).json()) as {
      scopes: Array<{ id: string; episodeCount?: number }>;
    };
    expect(scopes.scopes.map((s) => s.id)).toContain(scopeId);

    expect(await service.stop()).toBe(0);
  }, 600_000);
});
