/**
 * An admin import (`POST /scopes/:id/import`) of an export with one 200 MiB episode, against the
 * service started as `npm start` does. Every door measures an episode by EPISODE_MAX_BYTES (4 MiB
 * here); the streamed validator refuses the oversized string while it reads it, never holding it.
 * The answer is a 400 naming the field, its size and the limit; nothing of the import is stored;
 * the service's peak resident memory grows by less than {@link MAX_RSS_GROWTH} and /healthz keeps
 * answering within 1 s meanwhile (probed from a process of its own, as a supervisor would).
 *
 * Before the shared check the export was taken whole: 201, the 200 MiB row stored (and handed to
 * the embedder, which failed on it forever), with the service's memory growing by gigabytes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { exportEpisode, exportTime } from '../support/export-rows';
import { cleanEnv, startTs } from '../support/run-process';
import { freePort } from './chaos-support';
import { openSqlite, scalar } from './crash-support';

const MIB = 1024 * 1024;
/** The oversized episode's content. */
const HUGE_BYTES = 200 * MIB;
/** How much the service's peak resident memory may grow during the import. */
const MAX_RSS_GROWTH = 400 * MIB;
/** The slowest /healthz answer allowed while the import runs. */
const MAX_HEALTH_MS = 1_000;

/** Reads the peak resident memory (VmHWM) of a process, in bytes. */
function peakRss(pid: number): number | undefined {
  try {
    const kb = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? kb * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Polls /healthz every 100 ms until SIGTERM, then prints the latencies and failures it saw. */
const PROBER = `
const api = process.argv[1];
const latencies = [], failures = [];
let on = true;
process.on('SIGTERM', () => { on = false; });
(async () => {
  while (on) {
    const started = performance.now();
    try {
      const r = await fetch(api + '/healthz', { signal: AbortSignal.timeout(60000) });
      if (r.status !== 200) failures.push('healthz ' + r.status);
      await r.text();
    } catch (e) { failures.push('healthz ' + e.message); }
    latencies.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 100));
  }
  process.stdout.write(JSON.stringify({ latencies, failures }));
})();
`;

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
    const dataDir = path.join(tempDir(), 'data');
    const port = await freePort();
    const token = 'admin-token-oversized-import';
    const service = await startTs(
      'src/main.ts',
      cleanEnv({
        DATA_DIR: dataDir,
        ADMIN_TOKEN: token,
        API_PORT: String(port),
        SLEEP_ENABLED: 'false',
        EMBEDDER: 'ollama',
        OLLAMA_HOST: 'http://127.0.0.1:9',
        EPISODE_MAX_BYTES: String(4 * MIB),
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
    const answer = (await response.json()) as { error?: string; code?: string };
    const took = performance.now() - started;
    prober.kill('SIGTERM');
    await proberDone;
    const { latencies, failures } = JSON.parse(probes) as { latencies: number[]; failures: string[] };
    const worst = Math.max(...latencies);
    const peak = peakRss(pid);
    const scopes = (await (await fetch(`${api}/scopes`, { headers: { authorization: `Bearer ${token}` } })).json()) as { scopes: Array<{ id: string }> };
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const db = openSqlite(path.join(dataDir, 'nocturne.db'), { readonly: true });
    const stored = { episodes: scalar(db, 'SELECT COUNT(*) FROM Episode'), scopes: scalar(db, 'SELECT COUNT(*) FROM Scope') };
    db.close();
    // eslint-disable-next-line no-console
    console.log(
      `oversized-import: ${mib(body.length)} export, answered ${response.status} in ${(took / 1000).toFixed(1)} s (${JSON.stringify(answer).slice(0, 300)}); ` +
        `/healthz max ${worst.toFixed(0)} ms over ${latencies.length} polls; peak RSS ${mib(peak)} (after start-up ${mib(baseRss)}, growth ${mib(peak! - baseRss!)}); ` +
        `stored ${stored.episodes} episodes, ${stored.scopes} scopes`,
    );

    expect(response.status).toBe(400);
    expect(answer.code).toBe('import.invalid_document');
    expect(answer.error).toContain('episodes[1].content: is 200.0 MiB; the limit is 4.0 MiB (EPISODE_MAX_BYTES)');
    expect(scopes.scopes.map((s) => s.id)).not.toContain(scopeId);
    expect(stored).toEqual({ episodes: 0, scopes: 0 });
    expect(failures).toEqual([]);
    expect(worst).toBeLessThan(MAX_HEALTH_MS);
    expect(peak! - baseRss!).toBeLessThan(MAX_RSS_GROWTH);
  }, 600_000);
});
