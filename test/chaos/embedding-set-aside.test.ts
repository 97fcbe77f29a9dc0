/**
 * One row the embedder always refuses must not stop the embedding of everyone else. The service
 * runs as `npm start` does, with the real Ollama SDK against the loopback Ollama double, which
 * refuses (HTTP 400, as a model does past its context) any input holding a marker. A scope whose
 * first episode holds it is imported through the admin API, then another scope's episodes.
 *
 * The worker splits a failing batch until the refused row is alone, embeds the others, and after
 * three refusals sets the row aside: its `embeddedWith` says so, the log names its id, scope and
 * size (never its text), `/metrics` counts it, `doctor` lists it, and the later scope's episodes
 * get their vectors. Before, the batch holding the row was retried forever with a growing pause,
 * and no episode of any scope was embedded again.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { exportEpisode, exportTime } from '../support/export-rows';
import { runCli } from '../support/run-process';
import { startNocturne } from '../support/service-harness';
import { openSqlite, waitFor } from './crash-support';

const MARKER = 'zz-refused-by-the-model-zz';
const EMBEDDER = 'ollama:nomic-embed-text';
/** How long the test waits for the worker to reach a state (generous: 2 shared cores). */
const WAIT_MS = 90_000;

/** An export of `count` episodes of one scope, ids `ep-<tag>-000...`; `poison` holds the marker. */
function scopeExport(tag: string, count: number, poison?: number): Record<string, unknown> {
  const at = exportTime;
  return {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: `scope-${tag}`,
      key: `import:${tag}`,
      channel: 'import',
      kind: 'private',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: null,
      lastMessageAt: at(count),
      createdAt: at(0),
      updatedAt: at(count),
    },
    profile: null,
    conversations: [],
    episodes: Array.from({ length: count }, (_, i) =>
      exportEpisode(i, {
        id: `ep-${tag}-${String(i).padStart(3, '0')}`,
        externalId: `x-${tag}-${i}`,
        contentHash: `hash-${tag}-${i}`,
        content: i === poison ? `a long paste ${MARKER} that the model refuses` : `${tag} message ${i} about the harbor`,
      }),
    ),
    memories: [],
    memoryLinks: [],
    entities: [],
    digests: [],
    sleepRuns: [],
    auditEvents: [],
  };
}

describe('a row the embedder always refuses', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('is set aside with a record, and the other episodes, later scopes included, are embedded', async () => {
    const service = await startNocturne({ ollama: { start: { refuse: { containing: MARKER } } }, env: { LOG_LEVEL: 'info' } });
    stops.push(() => service.kill());
    const ollama = service.ollama!;
    const post = async (doc: Record<string, unknown>) => {
      const scopeId = (doc.scope as { id: string }).id;
      const response = await service.api(`/scopes/${scopeId}/import`, { method: 'POST', body: JSON.stringify(doc) });
      expect(response.status).toBe(201);
    };
    const db = openSqlite(path.join(service.dataDir, 'nocturne.db'), { readonly: true });
    const marks = () =>
      new Map(
        (db.prepare('SELECT id, embeddedWith FROM Episode').all() as Array<{ id: string; embeddedWith: string | null }>).map((r) => [r.id, r.embeddedWith]),
      );
    const embedded = (prefix: string) => [...marks()].filter(([id, mark]) => id.startsWith(prefix) && mark === EMBEDDER).length;

    // The refused row comes first in the queue (the lowest id), in one batch with its scope's others.
    await post(scopeExport('a', 20, 0));
    const firstScope = await waitFor(() => embedded('ep-a-') === 19, { timeoutMs: WAIT_MS, intervalMs: 250 });
    // Then another scope's episodes, after the refused row had its tries.
    await post(scopeExport('b', 10));
    const laterScope = await waitFor(() => embedded('ep-b-') === 10 && marks().get('ep-a-000') !== null, { timeoutMs: WAIT_MS, intervalMs: 250 });
    const poisonMark = marks().get('ep-a-000');
    const counts = { a: embedded('ep-a-'), b: embedded('ep-b-') };
    const metrics = await (await service.api('/metrics')).text();
    const refusedRequests = ollama.requests.filter((r) => r.inputs.some((text) => text.includes(MARKER))).length;
    const code = await service.stop({ keepDoubles: true });
    db.close();
    const doctor = await runCli(['doctor'], service.env);
    const log = service.output();
    const setAsideLine = log.split('\n').find((line) => line.includes('cannot be embedded')) ?? '';
    // eslint-disable-next-line no-console
    console.log(
      `embedding-set-aside: scope a embedded ${counts.a}/19, scope b ${counts.b}/10; refused row marked ${String(poisonMark)}; ` +
        `${refusedRequests} requests held the refused text; log: ${setAsideLine.slice(0, 400)}; doctor: ${doctor.stdout.split('\n').find((l) => l.includes('embeddings')) ?? '(no line)'}`,
    );

    expect(firstScope).toBe(true);
    expect(laterScope).toBe(true);
    expect(poisonMark).toBe(`set-aside:${EMBEDDER}`);
    // Tried a bounded number of times, not forever.
    expect(refusedRequests).toBeLessThan(20);
    expect(setAsideLine).toContain('ep-a-000');
    expect(setAsideLine).toContain('scope-a');
    expect(log).not.toContain(MARKER);
    expect(metrics).toMatch(/nocturne_embedding_set_aside_total\{kind="episode"\} 1/);
    expect(doctor.stdout).toMatch(/WARN {2}embeddings: 1 row the embedder could not embed was set aside .*episode ep-a-000 \(scope scope-a\)/);
    expect(code).toBe(0);
  }, 300_000);
});
