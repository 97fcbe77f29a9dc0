/**
 * Issue 16, item 9: one scope's keyword ranking must not depend on what other scopes hold. With
 * FTS5's bm25 the statistics (row count, rows holding a word, mean length) were those of the whole
 * index, so adding documents to scope B changed scope A's scores, and a word made common by B was
 * even left out of A's query: a side channel between scopes and a loss of recall.
 *
 * `npm start` runs as a child process with the admin API; scopes A and B are created by importing
 * exports; A's keyword searches are read before and after B receives 3,000 episodes full of A's
 * query words, and must be identical: the same rows, in the same order, with the same scores.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { exportEpisode } from '../support/export-rows';
import { startNocturne } from '../support/service-harness';
import { chaosSeed, createRng } from './chaos-support';

const WORDS = ['kites', 'violin', 'harbor', 'saffron', 'glacier', 'orchard', 'lantern', 'compass', 'meadow', 'thunder', 'copper', 'pebble'];
const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();

function exportOf(scopeId: string, key: string, texts: readonly string[]): Record<string, unknown> {
  return {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: scopeId,
      key,
      channel: 'import',
      kind: 'private',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: null,
      lastMessageAt: at(texts.length),
      createdAt: at(0),
      updatedAt: at(texts.length),
    },
    profile: null,
    conversations: [],
    episodes: texts.map((content, i) =>
      exportEpisode(i, {
        id: `${scopeId}-ep-${String(i).padStart(6, '0')}`,
        author: 'someone',
        content,
        timestamp: at(i),
        externalId: null,
        contentHash: `h${i}`,
        createdAt: at(i),
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

describe("one scope's keyword results do not depend on other scopes (issue 16, item 9)", () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('gives scope A the same rows and scores before and after scope B fills up with its words', async () => {
    const rng = createRng(chaosSeed('scope-statistics'));
    const service = await startNocturne();
    stops.push(() => service.kill());
    const importScope = async (scopeId: string, key: string, texts: string[]) => {
      const response = await service.api(`/scopes/${scopeId}/import`, { method: 'POST', body: JSON.stringify(exportOf(scopeId, key, texts)) });
      expect(response.status).toBe(201);
    };
    const sentence = (n: number) => Array.from({ length: n }, () => rng.pick(WORDS)).join(' ');
    // Scope A: 40 turns of a few of the words, of varied lengths.
    await importScope(
      'scope-a',
      'import:a',
      Array.from({ length: 40 }, () => `${sentence(3 + rng.int(12))}.`),
    );
    const queries = ['kites violin', 'harbor saffron glacier', 'kites', 'orchard lantern compass meadow'];
    const searchA = async () => {
      const out: Array<{ query: string; hits: Array<{ id: string; keyword: number }> }> = [];
      for (const query of queries) {
        const response = await service.api('/scopes/scope-a/search', {
          method: 'POST',
          body: JSON.stringify({ query, strategy: 'keyword', limit: 20, kinds: ['episode'] }),
        });
        expect(response.status).toBe(200);
        const body = (await response.json()) as { results: Array<{ id: string; parts?: { keyword?: number }; scoreParts?: { keyword?: number } }> };
        out.push({ query, hits: body.results.map((r) => ({ id: r.id, keyword: Number((r.parts ?? r.scoreParts)?.keyword ?? NaN) })) });
      }
      return out;
    };
    const before = await searchA();
    expect(before.every((q) => q.hits.length > 0)).toBe(true);
    // Scope B: 3,000 turns made of A's query words (they become the commonest words of the index).
    await importScope(
      'scope-b',
      'import:b',
      Array.from({ length: 3_000 }, () => `kites violin harbor saffron ${sentence(2 + rng.int(20))}`),
    );
    const after = await searchA();
    const changed = before.filter((q, i) => JSON.stringify(q) !== JSON.stringify(after[i]));
    // eslint-disable-next-line no-console
    console.log(
      `scope-statistics: ${queries.length} queries on scope A, ${changed.length} changed after scope B grew; ` +
        `first: ${JSON.stringify(before[0]!.hits.slice(0, 3))} -> ${JSON.stringify(after[0]!.hits.slice(0, 3))}`,
    );
    expect(after).toEqual(before);

    expect(await service.stop()).toBe(0);
  }, 180_000);
});
