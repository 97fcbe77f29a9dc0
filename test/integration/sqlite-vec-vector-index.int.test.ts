import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createSqliteVecVectorIndex,
  type SqliteVecVectorIndex,
  type SqliteVecVectorIndexOptions,
  type VectorSearchStats,
} from '../../src/vectors/indexes/sqlite-vec-vector-index';
import type { VectorKind, VectorRecord } from '../../src/memory/vectors/vector-index';
import { describeVectorIndexContract } from '../contracts/vector-index-contract';
import { seededRandom } from '../../src/shared/seeded-random';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-vectors-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describeVectorIndexContract({
  name: 'sqlite-vec (real file)',
  create: async () => createSqliteVecVectorIndex({ file: path.join(dir, 'contract', 'vectors.db'), dimension: 8 }),
  destroy: async (index) => index.clear(),
});

function gaussian(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

function normalized(vector: Float32Array): Float32Array {
  const length = Math.hypot(...vector);
  return vector.map((value) => value / length);
}

/**
 * Anisotropic, clustered vectors like real embeddings: a constant offset shared by all (so every
 * pair has a cosine around 0.5), cluster centroids, and noise around them.
 */
function clusteredVectors(options: { seed: number; dimension: number; clusters: number; noise: number }): {
  sample(): Float32Array;
} {
  const next = seededRandom(options.seed);
  const d = options.dimension;
  const offset = 1 / Math.sqrt(d);
  const centroids = Array.from({ length: options.clusters }, () => normalized(Float32Array.from({ length: d }, () => gaussian(next))));
  return {
    sample() {
      const centroid = centroids[Math.floor(next() * centroids.length)]!;
      return normalized(Float32Array.from({ length: d }, (_, i) => centroid[i]! + offset + (gaussian(next) * options.noise) / Math.sqrt(d)));
    },
  };
}

describe('sqlite-vec vector index: the quantized path of large scopes', () => {
  const dimension = 256;
  const file = path.join(dir, 'quantized', 'vectors.db');
  const stats: VectorSearchStats[] = [];
  const opened: SqliteVecVectorIndex[] = [];
  let index: SqliteVecVectorIndex;
  const scopeId = 'large-scope';
  const stored: VectorRecord[] = [];
  const data = clusteredVectors({ seed: 7, dimension, clusters: 12, noise: 0.6 });

  function open(extra: Partial<SqliteVecVectorIndexOptions> = {}): SqliteVecVectorIndex {
    const created = createSqliteVecVectorIndex({ file, dimension, exactScanBelow: 1000, onSearch: (s) => stats.push(s), ...extra });
    opened.push(created);
    return created;
  }

  beforeAll(async () => {
    index = open();
    expect(await index.init()).toBeNull();
    await index.setIdentity({ embedder: 'test:clustered-256', dimension });
    for (let i = 0; i < 3000; i++) {
      const kind: VectorKind = i % 3 === 0 ? 'memory' : 'episode';
      stored.push({ scopeId, id: `item-${i}`, kind, vector: data.sample() });
    }
    for (let start = 0; start < stored.length; start += 500) await index.upsert(stored.slice(start, start + 500));
    // A small scope with the same kind of data stays on the exact path.
    await index.upsert(stored.slice(0, 200).map((each) => ({ ...each, scopeId: 'small-scope' })));
  });

  afterEach(() => {
    stats.length = 0;
  });

  afterAll(async () => {
    for (const each of opened) await each.close();
  });

  async function agreement(queries: Float32Array[], limit: number, kind?: VectorKind): Promise<number> {
    let same = 0;
    for (const vector of queries) {
      const fast = await index.search({ scopeId, vector, limit, kind });
      const exact = await index.searchExact({ scopeId, vector, limit, kind });
      expect(fast).toHaveLength(exact.length);
      if (fast.every((hit, i) => hit.id === exact[i]!.id)) same++;
      fast.forEach((hit, i) => expect(hit.score).toBeCloseTo(exact[i]!.score, 5));
      if (kind) expect(fast.every((hit) => hit.kind === kind)).toBe(true);
    }
    return same / queries.length;
  }

  it('returns the exact top 10 for fresh queries from the same clusters (>= 95 % of queries, same order)', async () => {
    const queries = Array.from({ length: 60 }, () => data.sample());
    const rate = await agreement(queries, 10);
    expect(rate).toBeGreaterThanOrEqual(0.95);
    expect(stats.filter((s) => s.path === 'quantized')).toHaveLength(60);
    // It re-ranked a short list, not the scope.
    expect(Math.max(...stats.filter((s) => s.path === 'quantized').map((s) => s.reranked))).toBeLessThan(300);
  });

  it('agrees with the exact search for near-duplicates, a kind filter and a limit of 100', async () => {
    const nearDuplicates = stored.slice(0, 30).map((each) => normalized(each.vector.map((value, i) => value + (i % 7 === 0 ? 0.01 : 0))));
    expect(await agreement(nearDuplicates, 10)).toBeGreaterThanOrEqual(0.95);
    const hits = await index.search({ scopeId, vector: stored[5]!.vector, limit: 1 });
    expect(hits[0]).toEqual({ id: 'item-5', kind: stored[5]!.kind, score: expect.any(Number) });
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(
      await agreement(
        Array.from({ length: 15 }, () => data.sample()),
        10,
        'memory',
      ),
    ).toBeGreaterThanOrEqual(0.95);
    expect(
      await agreement(
        Array.from({ length: 15 }, () => data.sample()),
        100,
      ),
    ).toBeGreaterThanOrEqual(0.9);
  });

  it('with exactTop, re-ranks only for the best few: those are exact, the rest of the limit carries close estimates', async () => {
    let sameHead = 0;
    let overlap = 0;
    const queries = Array.from({ length: 20 }, () => data.sample());
    for (const vector of queries) {
      const fast = await index.search({ scopeId, vector, limit: 100, exactTop: 10 });
      const exact = await index.searchExact({ scopeId, vector, limit: 100 });
      expect(fast).toHaveLength(100);
      expect(new Set(fast.map((h) => h.id)).size).toBe(100);
      if (fast.slice(0, 10).every((hit, i) => hit.id === exact[i]!.id)) sameHead++;
      fast.slice(0, 10).forEach((hit, i) => expect(hit.score).toBeCloseTo(exact[i]!.score, 5));
      // The tail: estimates of the true cosine, for nearly the true set.
      const truth = new Map((await index.searchExact({ scopeId, vector, limit: 3000 })).map((h) => [h.id, h.score]));
      for (const hit of fast.slice(10)) expect(Math.abs(hit.score - truth.get(hit.id)!)).toBeLessThan(0.02);
      const exactIds = new Set(exact.map((h) => h.id));
      overlap += fast.filter((h) => exactIds.has(h.id)).length / 100;
    }
    expect(sameHead / queries.length).toBeGreaterThanOrEqual(0.95);
    expect(overlap / queries.length).toBeGreaterThanOrEqual(0.9);
    // It re-ranked for the top 10 only: far fewer than the 100 returned.
    expect(Math.max(...stats.filter((s) => s.path === 'quantized').map((s) => s.reranked))).toBeLessThan(100);
  });

  it('keeps small scopes on the exact path', async () => {
    const hits = await index.search({ scopeId: 'small-scope', vector: stored[3]!.vector, limit: 5 });
    expect(hits[0]!.id).toBe('item-3');
    expect(stats.at(-1)!.path).toBe('exact');
  });

  it('sees its own writes on the quantized path: new, replaced and deleted vectors', async () => {
    const probe = data.sample();
    await index.search({ scopeId, vector: probe, limit: 5 }); // the scope's in-memory copy exists now
    const fresh = normalized(Float32Array.from({ length: dimension }, (_, i) => (i === 3 ? 1 : 0.001)));
    await index.upsert([{ scopeId, id: 'new-item', kind: 'memory', vector: fresh }]);
    let [best] = await index.search({ scopeId, vector: fresh, limit: 1 });
    expect(best!.id).toBe('new-item');
    expect(stats.at(-1)!.path).toBe('quantized');

    // Replace an existing vector with the new direction; both now tie at the top.
    await index.upsert([{ scopeId, id: 'item-10', kind: 'memory', vector: fresh }]);
    const top = await index.search({ scopeId, vector: fresh, limit: 2 });
    expect(top.map((hit) => hit.id).sort()).toEqual(['item-10', 'new-item']);

    await index.delete(scopeId, ['new-item', 'item-10']);
    [best] = await index.search({ scopeId, vector: fresh, limit: 1 });
    expect(best!.id).not.toBe('new-item');
    expect(best!.id).not.toBe('item-10');
    expect(best!.score).toBeLessThan(0.9);
    expect(await index.count(scopeId)).toBe(2999); // 3,000 + new-item - 2
    await index.upsert([stored[10]!]);
  });

  it('sees the writes of another connection to the same file (another process)', async () => {
    const probe = data.sample();
    await index.search({ scopeId, vector: probe, limit: 5 });
    const other = open();
    await other.init();
    const fresh = normalized(Float32Array.from({ length: dimension }, (_, i) => (i === 9 ? 1 : -0.002)));
    await other.upsert([{ scopeId, id: 'from-elsewhere', kind: 'episode', vector: fresh }]);
    const [best] = await index.search({ scopeId, vector: fresh, limit: 1 });
    expect(best!.id).toBe('from-elsewhere');
    expect(stats.at(-1)!.path).toBe('quantized');
    await other.delete(scopeId, ['from-elsewhere']);
    const after = await index.search({ scopeId, vector: fresh, limit: 3 });
    expect(after.map((hit) => hit.id)).not.toContain('from-elsewhere');
  });

  it('falls back to the exact path when the scope does not fit in the memory budget', async () => {
    const tight = open({ scanMemoryBytes: 64 * 1024 });
    await tight.init();
    const query = stored[42]!.vector;
    const hits = await tight.search({ scopeId, vector: query, limit: 10 });
    expect(stats.at(-1)!.path).toBe('exact');
    expect(hits.map((hit) => hit.id)).toEqual((await index.search({ scopeId, vector: query, limit: 10 })).map((hit) => hit.id));
  });
});

describe('sqlite-vec vector index: input checks and lifecycle', () => {
  it('refuses zero vectors, bad kinds, limits and scopes, and use before init or after close', async () => {
    const index = createSqliteVecVectorIndex({ file: path.join(dir, 'checks', 'vectors.db'), dimension: 4 });
    await expect(index.count('s')).rejects.toMatchObject({ code: 'vectors.not_initialized' });
    await index.init();
    await index.setIdentity({ embedder: 'test:4', dimension: 4 });
    const vector = Float32Array.from([1, 0, 0, 0]);
    await expect(index.upsert([{ scopeId: 's', id: 'a', kind: 'episode', vector: new Float32Array(4) }])).rejects.toMatchObject({
      code: 'vectors.invalid_vector',
    });
    await expect(index.upsert([{ scopeId: 's', id: 'a', kind: 'note' as VectorKind, vector }])).rejects.toMatchObject({ code: 'vectors.invalid_kind' });
    await expect(index.upsert([{ scopeId: '', id: 'a', kind: 'episode', vector }])).rejects.toMatchObject({ code: 'vectors.invalid_scope' });
    await expect(index.search({ scopeId: 's', vector, limit: -1 })).rejects.toMatchObject({ code: 'vectors.invalid_limit' });
    await index.upsert([{ scopeId: 's', id: 'a', kind: 'episode', vector }]);
    expect(await index.search({ scopeId: 's', vector, limit: 0 })).toEqual([]);
    expect(await index.search({ scopeId: 's', vector: new Float32Array(4), limit: 3 })).toEqual([]);
    await index.close();
    await expect(index.count('s')).rejects.toMatchObject({ code: 'vectors.closed' });
  });

  it('reports a file it cannot open as vectors.unavailable with a hint', async () => {
    const notADatabase = path.join(dir, 'not-a-db');
    fs.writeFileSync(notADatabase, 'this is not SQLite '.repeat(100));
    const index = createSqliteVecVectorIndex({ file: notADatabase, dimension: 4 });
    const error = await index.init().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'vectors.unavailable', hint: expect.stringContaining('vectors.db') });
    await index.close();
  });
});
