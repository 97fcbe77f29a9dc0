/**
 * Benchmark of the sqlite-vec VectorIndex: `npx tsx bench/vector-index.bench.ts` (about a minute).
 *
 * Builds, in a temporary file:
 * - `clustered`: 100,000 × 512 anisotropic clustered vectors in one scope (a shared offset, so any
 *   two vectors have a cosine around 0.33, and 200 clusters with ~0.67 inside a cluster);
 * - `tight`: the same with 20 tight clusters (~0.96 inside a cluster): thousands of near-ties;
 * - `uniform`: 100,000 × 512 uniformly random unit vectors in one scope (the hardest case for sign
 *   bits: the nearest neighbours are barely nearer than the rest);
 * - `spread`: 100,000 clustered vectors over 100 scopes of 1,000.
 * Then prints insert throughput, search p50/p95 for top-10, top-100 and top-200 with the index, the same for
 * two exact brute-force scans measured in the same run (sqlite-vec's scan of the float vectors and a
 * plain JavaScript dot-product loop), recall of the index against the exact answers, and RSS.
 *
 * Queries are fresh vectors from the same distribution (not stored ones), plus near-duplicates of
 * stored vectors (a stored vector with 5 % noise).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSqliteVecVectorIndex, type VectorSearchStats } from '../src/vectors/indexes/sqlite-vec-vector-index';
import type { VectorHit, VectorRecord } from '../src/memory/vectors/vector-index';
import { seededRandom } from '../src/shared/seeded-random';

const DIMENSION = 512;
const COUNT = 100_000;
const FRESH_QUERIES = 100;
const NEAR_QUERIES = 50;
const SQLITE_EXACT_QUERIES = 10;
const LIMITS = [10, 100, 200] as const;
type Limit = (typeof LIMITS)[number];

// ---- data ----

function gaussians(next: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const value = spare;
      spare = null;
      return value;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - next()));
    const angle = 2 * Math.PI * next();
    spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  };
}

function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  const inverse = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i]! *= inverse;
  return vector;
}

type Generator = () => Float32Array;

function clustered(seed: number, clusters: number, noise: number): Generator {
  const gauss = gaussians(seededRandom(seed));
  const offset = 1 / Math.sqrt(DIMENSION);
  const centroids = Array.from({ length: clusters }, () => normalize(Float32Array.from({ length: DIMENSION }, gauss)));
  const pick = seededRandom(seed + 1);
  return () => {
    const centroid = centroids[Math.floor(pick() * clusters)]!;
    const vector = new Float32Array(DIMENSION);
    for (let i = 0; i < DIMENSION; i++) vector[i] = centroid[i]! + offset + (gauss() * noise) / Math.sqrt(DIMENSION);
    return normalize(vector);
  };
}

function uniform(seed: number): Generator {
  const gauss = gaussians(seededRandom(seed));
  return () => normalize(Float32Array.from({ length: DIMENSION }, gauss));
}

function nearDuplicate(vector: Float32Array, gauss: () => number): Float32Array {
  return normalize(vector.map((value) => value + (gauss() * 0.05) / Math.sqrt(DIMENSION)));
}

// ---- the plain JavaScript exact scan ----

function jsExactTop(flat: Float32Array, count: number, query: Float32Array, limit: number): number[] {
  const heapScores = new Float64Array(limit);
  const heapIds = new Int32Array(limit);
  let filled = 0;
  for (let row = 0; row < count; row++) {
    const base = row * DIMENSION;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    for (let i = 0; i < DIMENSION; i += 4) {
      s0 += flat[base + i]! * query[i]!;
      s1 += flat[base + i + 1]! * query[i + 1]!;
      s2 += flat[base + i + 2]! * query[i + 2]!;
      s3 += flat[base + i + 3]! * query[i + 3]!;
    }
    const score = s0 + s1 + s2 + s3;
    if (filled < limit) {
      let i = filled++;
      heapScores[i] = score;
      heapIds[i] = row;
      while (i > 0 && heapScores[(i - 1) >> 1]! > heapScores[i]!) {
        const parent = (i - 1) >> 1;
        [heapScores[parent], heapScores[i]] = [heapScores[i]!, heapScores[parent]!];
        [heapIds[parent], heapIds[i]] = [heapIds[i]!, heapIds[parent]!];
        i = parent;
      }
    } else if (score > heapScores[0]!) {
      heapScores[0] = score;
      heapIds[0] = row;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < limit && heapScores[left]! < heapScores[smallest]!) smallest = left;
        if (right < limit && heapScores[right]! < heapScores[smallest]!) smallest = right;
        if (smallest === i) break;
        [heapScores[smallest], heapScores[i]] = [heapScores[i]!, heapScores[smallest]!];
        [heapIds[smallest], heapIds[i]] = [heapIds[i]!, heapIds[smallest]!];
        i = smallest;
      }
    }
  }
  return Array.from(heapIds.subarray(0, filled))
    .map((id, i) => ({ id, score: heapScores[i]! }))
    .sort((a, b) => b.score - a.score)
    .map((each) => each.id);
}

// ---- measuring ----

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

function summary(values: number[]): string {
  return `p50 ${percentile(values, 50).toFixed(1)} ms, p95 ${percentile(values, 95).toFixed(1)} ms`;
}

async function timed<T>(work: () => Promise<T> | T): Promise<{ result: T; ms: number }> {
  const start = process.hrtime.bigint();
  const result = await work();
  return { result, ms: Number(process.hrtime.bigint() - start) / 1e6 };
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

async function main(): Promise<void> {
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-vector-bench-'));
  const file = path.join(dir, 'vectors.db');
  const stats: VectorSearchStats[] = [];
  const index = createSqliteVecVectorIndex({ file, dimension: DIMENSION, onSearch: (s) => stats.push(s) });
  await index.init();
  await index.setIdentity({ embedder: 'bench:synthetic-512', dimension: DIMENSION });
  console.log(
    `sqlite-vec vector index benchmark: ${COUNT.toLocaleString('en')} × ${DIMENSION} per data set, ${os.cpus().length} CPUs, Node ${process.version}`,
  );
  console.log(`file: ${file}\n`);

  const flat = new Float32Array(COUNT * DIMENSION); // the JavaScript baseline's copy, reused per data set

  async function load(name: string, generate: Generator, scopeOf: (i: number) => string): Promise<void> {
    let insertMs = 0;
    for (let start = 0; start < COUNT; start += 1000) {
      const batch: VectorRecord[] = [];
      for (let i = start; i < start + 1000; i++) {
        const vector = generate();
        flat.set(vector, i * DIMENSION);
        batch.push({ scopeId: scopeOf(i), id: `${name}-${i}`, kind: i % 4 === 0 ? 'memory' : 'episode', vector });
      }
      insertMs += (await timed(() => index.upsert(batch))).ms;
    }
    console.log(
      `${name}: inserted ${COUNT.toLocaleString('en')} vectors in ${(insertMs / 1000).toFixed(1)} s (${Math.round(COUNT / (insertMs / 1000)).toLocaleString('en')} vectors/s, batches of 1,000)`,
    );
  }

  async function measureLargeScope(name: string, generate: Generator, seed: number): Promise<void> {
    await load(name, generate, () => name);
    const gauss = gaussians(seededRandom(seed));
    const pick = seededRandom(seed + 2);
    const fresh = Array.from({ length: FRESH_QUERIES }, generate);
    const near = Array.from({ length: NEAR_QUERIES }, () => {
      const row = Math.floor(pick() * COUNT);
      return nearDuplicate(flat.slice(row * DIMENSION, (row + 1) * DIMENSION), gauss);
    });

    const first = await timed(() => index.search({ scopeId: name, vector: fresh[0]!, limit: 10 }));
    console.log(`  first search (loads the scope's int8 copy, ${mib(COUNT * DIMENSION)}): ${first.ms.toFixed(0)} ms`);

    for (const [label, queries] of [
      ['fresh queries', fresh],
      ['near-duplicate queries', near],
    ] as const) {
      const ms: Record<Limit, number[]> = { 10: [], 100: [], 200: [] };
      const jsMs: number[] = [];
      let exactTop10 = 0;
      let recall10 = 0;
      let recall100 = 0;
      let reranked = 0;
      for (const query of queries) {
        const fast: Record<Limit, VectorHit[]> = { 10: [], 100: [], 200: [] };
        for (const limit of LIMITS) {
          const run = await timed(() => index.search({ scopeId: name, vector: query, limit }));
          ms[limit].push(run.ms);
          fast[limit] = run.result;
          if (limit === 10) reranked += stats.at(-1)!.reranked;
        }
        const js = await timed(() => jsExactTop(flat, COUNT, query, 200));
        jsMs.push(js.ms);
        const exact = js.result.map((row) => `${name}-${row}`);
        const exact10 = new Set(exact.slice(0, 10));
        const got10 = fast[10].filter((hit) => exact10.has(hit.id)).length;
        recall10 += got10 / 10;
        if (got10 === 10) exactTop10++;
        const exact100 = new Set(exact.slice(0, 100));
        recall100 += fast[100].filter((hit) => exact100.has(hit.id)).length / 100;
      }
      const paths = new Set(stats.slice(-queries.length * LIMITS.length).map((s) => s.path));
      console.log(`  ${label} (${queries.length}), path ${[...paths].join('+')}:`);
      console.log(`    index top-10: ${summary(ms[10])}; top-100: ${summary(ms[100])}; top-200: ${summary(ms[200])}`);
      console.log(`    re-ranked ${(reranked / queries.length).toFixed(0)} candidates per top-10 query`);
      console.log(`    JavaScript exact scan (top-200): ${summary(jsMs)}`);
      console.log(
        `    recall@10 ${(recall10 / queries.length).toFixed(4)} (top-10 identical to exact for ${((exactTop10 / queries.length) * 100).toFixed(0)} % of queries), recall@100 ${(recall100 / queries.length).toFixed(4)}`,
      );
    }

    const sqliteMs: Record<10 | 100, number[]> = { 10: [], 100: [] };
    for (const query of fresh.slice(0, SQLITE_EXACT_QUERIES)) {
      for (const limit of [10, 100] as const) sqliteMs[limit].push((await timed(() => index.searchExact({ scopeId: name, vector: query, limit }))).ms);
    }
    console.log(`  sqlite-vec exact scan (${SQLITE_EXACT_QUERIES} queries): top-10 ${summary(sqliteMs[10])}; top-100 ${summary(sqliteMs[100])}`);
    console.log(`  RSS now ${mib(process.memoryUsage().rss)}\n`);
  }

  await measureLargeScope('clustered', clustered(11, 200, 1), 21);
  await measureLargeScope('tight', clustered(14, 20, 0.3), 24);
  await measureLargeScope('uniform', uniform(12), 22);

  // 100 scopes of 1,000: every search is the exact path on one small partition.
  await load('spread', clustered(13, 200, 1), (i) => `spread-${i % 100}`);
  const pick = seededRandom(23);
  const generate = clustered(13, 200, 1);
  const ms: Record<10 | 100, number[]> = { 10: [], 100: [] };
  let wrongScope = 0;
  for (let q = 0; q < 200; q++) {
    const scope = Math.floor(pick() * 100);
    for (const limit of [10, 100] as const) {
      const run = await timed(() => index.search({ scopeId: `spread-${scope}`, vector: generate(), limit }));
      ms[limit].push(run.ms);
      wrongScope += run.result.filter((hit) => Number(hit.id.split('-')[1]) % 100 !== scope).length;
    }
  }
  console.log(
    `  200 searches in random scopes of 1,000 (path ${stats.at(-1)!.path}): top-10 ${summary(ms[10])}; top-100 ${summary(ms[100])}; hits from another scope: ${wrongScope}`,
  );

  await index.close();
  const size = fs.readdirSync(dir).reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
  console.log(
    `\nfile size ${mib(size)} for ${(4 * COUNT).toLocaleString('en')} vectors; final RSS ${mib(process.memoryUsage().rss)} (includes the benchmark's own ${mib(flat.byteLength)} float copy for the JavaScript scan)`,
  );
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
