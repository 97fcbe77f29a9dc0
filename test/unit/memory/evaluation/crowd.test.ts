/**
 * The crowd's plan and loader: the sizes add up, vary, leave no scope empty and put the largest
 * first; the loader writes every episode once, in batches, with a vector near its source turn's,
 * and other speakers' names in place of the source conversation's.
 */
import { describe, expect, it } from '@jest/globals';
import { dot, normalizeVector } from '../../../../src/memory/embeddings/embedder';
import { loadCrowd, planCrowdScopes, type CrowdEpisode, type CrowdStore } from '../../../../src/evaluation/crowd';

describe('planCrowdScopes', () => {
  it('spreads the episodes over the scopes, every scope holding some, sizes varied', () => {
    const sizes = planCrowdScopes({ episodes: 100_000, scopes: 100 });
    expect(sizes).toHaveLength(100);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(100_000);
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(400);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1_600);
    expect(new Set(sizes).size).toBeGreaterThan(50);
  });

  it('puts the largest scope first and shares the rest', () => {
    const sizes = planCrowdScopes({ episodes: 1_000_000, scopes: 1_000, largest: 100_000 });
    expect(sizes[0]).toBe(100_000);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(1_000_000);
    expect(sizes.slice(1).some((s) => Math.abs(s - 1_000) < 50)).toBe(true);
  });

  it('gives one episode per scope when there are as many scopes as episodes, and refuses more scopes', () => {
    expect(planCrowdScopes({ episodes: 7, scopes: 7 })).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(() => planCrowdScopes({ episodes: 7, scopes: 8 })).toThrow(RangeError);
    expect(() => planCrowdScopes({ episodes: 7, scopes: 0 })).toThrow(RangeError);
  });
});

describe('loadCrowd', () => {
  it('stores every planned episode once, with a vector close to its source and other names', async () => {
    const dimension = 64;
    const sourceVector = normalizeVector(Float32Array.from({ length: dimension }, (_, i) => Math.sin(i + 1)));
    const stored = new Map<string, CrowdEpisode[]>();
    const vectors: Float32Array[] = [];
    let batches = 0;
    const store: CrowdStore = {
      async ingest(key, episodes) {
        batches += 1;
        const list = stored.get(key) ?? [];
        list.push(...episodes);
        stored.set(key, list);
        return { scopeId: `id-${key}`, ids: episodes.map((e) => `${key}/${e.externalId}`) };
      },
      async attachVectors(_scopeId, items) {
        vectors.push(...items.map((i) => i.vector));
      },
    };
    const sizes = [4_500, 10, 1];
    const { report, scopes } = await loadCrowd({
      store,
      sources: [{ content: 'Caroline told Melanie about the pottery class', speakers: ['Caroline', 'Melanie'], vector: sourceVector }],
      sizes,
    });
    expect(report).toMatchObject({ episodes: 4_511, scopes: 3, largestScope: 4_500 });
    expect(scopes.map((s) => [s.key, s.size])).toEqual([
      ['crowd:0', 4_500],
      ['crowd:1', 10],
      ['crowd:2', 1],
    ]);
    expect(batches).toBe(5 + 1 + 1);
    const all = [...stored.values()].flat();
    expect(new Set(all.map((e) => e.externalId)).size).toBe(4_511);
    expect(all.every((e) => !e.content.includes('Caroline') && !e.content.includes('Melanie'))).toBe(true);
    expect(all.every((e) => e.content.endsWith(' about the pottery class'))).toBe(true);
    expect(vectors).toHaveLength(4_511);
    const cosines = vectors.map((v) => dot(v, sourceVector));
    expect(Math.min(...cosines)).toBeGreaterThan(0.9);
    expect(Math.max(...cosines)).toBeLessThan(0.99999);
  });
});
