/**
 * An admin import (`POST /scopes/:id/import`) of an export with one 200 MiB episode, against the
 * service started as `npm start` does. Every door measures an episode by EPISODE_MAX_BYTES (4 MiB
 * here); the streamed validator refuses the oversized string while it reads it, never holding it.
 * The answer is a 400 naming the field, its size and the limit; nothing of the import is stored;
 * the service's peak resident memory grows by less than {@link MAX_RSS_GROWTH} and /healthz keeps
 * answering within 1 s meanwhile (probed from a process of its own, as a supervisor would, beside
 * an idle control process whose answers measure the machine's own delay).
 *
 * Before the shared check the export was taken whole: 201, the 200 MiB row stored (and handed to
 * the embedder, which failed on it forever), with the service's memory growing by gigabytes.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { exportEpisode, exportTime } from '../support/export-rows';
import { routeHealth, startHealthProber } from '../support/health-prober';
import { peakRss } from '../support/peak-rss';
import { startNocturne } from '../support/service-harness';
import { openSqlite, scalar } from './crash-support';

const MIB = 1024 * 1024;
/** The oversized episode's content. */
const HUGE_BYTES = 200 * MIB;
/** How much the service's peak resident memory may grow during the import. */
const MAX_RSS_GROWTH = 400 * MIB;
/** The slowest /healthz answer allowed while the import runs (the service's own share: test/support/health-prober.ts). */
const MAX_HEALTH_MS = 1_000;

/** An export of three episodes, the second with `HUGE_BYTES` of content, as bytes. */
function oversizedExport(scopeId: string): Buffer {
  const at = exportTime;
  const marker = '@@HUGE@@';
  const doc = {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: scopeId,
      key: 'import:oversized',
      channel: 'import',
      kind: 'private',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: null,
      lastMessageAt: at(3),
      createdAt: at(0),
      updatedAt: at(3),
    },
    profile: null,
    conversations: [],
    episodes: [
      exportEpisode(0, { content: 'a first, ordinary message' }),
      exportEpisode(1, { content: marker }),
      exportEpisode(2, { content: 'a last, ordinary message' }),
    ],
    memories: [],
    memoryLinks: [],
    entities: [],
    digests: [],
    sleepRuns: [],
    auditEvents: [],
  };
  const [before, after] = JSON.stringify(doc, null, 2).split(marker) as [string, string];
  return Buffer.concat([Buffer.from(before), Buffer.alloc(HUGE_BYTES, 'lorem ipsum '), Buffer.from(after)]);
}

const mib = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / MIB).toFixed(0)} MiB`);

describe('an export with one oversized episode, posted to the admin API', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('is refused with a 400 naming EPISODE_MAX_BYTES, stores nothing, grows memory by < 400 MiB and keeps /healthz under 1 s', async () => {
    const scopeId = 'scope-oversized';
    const body = oversizedExport(scopeId);
    const service = await startNocturne({ env: { EPISODE_MAX_BYTES: String(4 * MIB) } });
    stops.push(() => service.kill());
    const pid = service.child.pid!;
    const baseRss = peakRss(pid);
    const prober = startHealthProber(service.apiBase);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    const response = await service.api(`/scopes/${scopeId}/import`, { method: 'POST', body, signal: AbortSignal.timeout(600_000) });
    const answer = (await response.json()) as { error?: string; code?: string };
    const took = performance.now() - started;
    const health = routeHealth(await prober.stop(), '/healthz');
    const peak = peakRss(pid);
    const scopes = (await (await service.api('/scopes')).json()) as { scopes: Array<{ id: string }> };
    expect(await service.stop()).toBe(0);
    const db = openSqlite(path.join(service.dataDir, 'nocturne.db'), { readonly: true });
    const stored = { episodes: scalar(db, 'SELECT COUNT(*) FROM Episode'), scopes: scalar(db, 'SELECT COUNT(*) FROM Scope') };
    db.close();
    // eslint-disable-next-line no-console
    console.log(
      `oversized-import: ${mib(body.length)} export, answered ${response.status} in ${(took / 1000).toFixed(1)} s (${JSON.stringify(answer).slice(0, 300)}); ` +
        `/healthz max ${health.worst} ms (its own ${health.worstOwn} ms, the control's worst ${health.controlWorst} ms) over ${health.count} polls; peak RSS ${mib(peak)} (after start-up ${mib(baseRss)}, growth ${mib(peak! - baseRss!)}); ` +
        `stored ${stored.episodes} episodes, ${stored.scopes} scopes`,
    );

    expect(response.status).toBe(400);
    expect(answer.code).toBe('import.invalid_document');
    expect(answer.error).toContain('episodes[1].content: is 200.0 MiB; the limit is 4.0 MiB (EPISODE_MAX_BYTES)');
    expect(scopes.scopes.map((s) => s.id)).not.toContain(scopeId);
    expect(stored).toEqual({ episodes: 0, scopes: 0 });
    expect(health.allOk).toBe(true);
    expect(health.worstOwn).toBeLessThan(MAX_HEALTH_MS);
    expect(peak! - baseRss!).toBeLessThan(MAX_RSS_GROWTH);
  }, 600_000);
});
