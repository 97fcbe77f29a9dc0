import { describe, expect, it } from '@jest/globals';
import { int8DotKernel } from '../../../src/vectors/indexes/int8-dot-kernel';
import { createScopeScan, quantize } from '../../../src/vectors/indexes/int8-scope-scan';
import { seededRandom } from '../../../src/shared/seeded-random';
import type { VectorKind } from '../../../src/memory/vectors/vector-index';

/**
 * The scan's selection as specified, pass by pass over every int8 score (what the scan computed in
 * three passes before it did it in one): the limit-th best lower bound; every vector whose upper
 * bound reaches it, the best `cap` of them by int8 score when more qualify; the best `estimatedTop`
 * by int8 score, ties to the smaller rowid.
 */
function reference(
  entries: ReadonlyArray<{ rowid: number; kind: VectorKind; code: Buffer; scale: number }>,
  query: Float32Array,
  limit: number,
  kind: VectorKind | undefined,
  cap: number,
  estimatedTop: number,
): { rerank: number[]; estimated: Array<{ rowid: number; score: number }> } {
  const stride = Math.ceil(query.length / 16) * 16;
  const queryMax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));
  let max = 0;
  let squares = 0;
  for (const x of query) {
    max = Math.max(max, Math.abs(x));
    squares += x * x;
  }
  const queryNorm = Math.sqrt(squares);
  const factor = queryMax / max;
  const q16 = Array.from(query, (x) => Math.round(x * factor));
  const unit = 1 / factor;
  const perScale = (6 / Math.sqrt(12)) * queryNorm;
  const fromQuery = (6 / Math.sqrt(12)) * unit;
  const eligible = entries.filter((e) => kind === undefined || e.kind === kind);
  const scored = eligible.map((e) => {
    const codes = new Int8Array(e.code.buffer, e.code.byteOffset, e.code.length);
    let raw = 0;
    for (let i = 0; i < codes.length; i++) raw += codes[i]! * q16[i]!;
    const scale = Math.fround(e.scale);
    return { rowid: e.rowid, approx: raw * scale, margin: perScale * scale + fromQuery };
  });
  const lowers = scored.map((s) => s.approx * unit - s.margin).sort((a, b) => b - a);
  const threshold = lowers.length < limit ? -Infinity : lowers[limit - 1]!;
  let rerank = scored.filter((s) => s.approx * unit + s.margin >= threshold);
  if (rerank.length > cap) rerank = [...rerank].sort((a, b) => b.approx - a.approx).slice(0, cap);
  const estimated =
    estimatedTop === 0
      ? []
      : [...scored]
          .sort((a, b) => b.approx - a.approx || a.rowid - b.rowid)
          .slice(0, estimatedTop)
          .map((s) => ({ rowid: s.rowid, score: (s.approx * unit) / queryNorm }));
  return { rerank: rerank.map((s) => s.rowid), estimated };
}

describe('int8 scope scan: candidates in one pass', () => {
  const kernel = int8DotKernel();
  const run = kernel ? it : it.skip;

  run('selects exactly what the pass-by-pass specification selects: ties, both kinds, the cap, removed slots', () => {
    const next = seededRandom(11);
    const dimension = 40; // not a multiple of 16: the codes are padded
    const centres = Array.from({ length: 6 }, () => Float32Array.from({ length: dimension }, () => next() - 0.5));
    const entries: Array<{ rowid: number; kind: VectorKind; code: Buffer; scale: number }> = [];
    // Rowids out of slot order, so ties between equal int8 scores are decided by rowid, not by position.
    const rowids = Array.from({ length: 2_400 }, (_, i) => i * 7 + 1).sort(() => next() - 0.5);
    for (const [i, rowid] of rowids.entries()) {
      const centre = centres[i % centres.length]!;
      // Every fifth vector repeats the one before it: equal codes, equal scores.
      const previous = entries[entries.length - 1];
      const { code, scale } = i % 5 === 4 && previous ? { code: previous.code, scale: previous.scale } : quantize(centre.map((x) => x + (next() - 0.5) * 0.3));
      entries.push({ rowid, kind: i % 3 === 0 ? 'memory' : 'episode', code, scale });
    }
    const scan = createScopeScan(kernel!, dimension, 100);
    for (const e of entries) scan.set(e.rowid, e.kind, e.code, e.scale);
    // Removing moves the last slot into the gap: the scan's order is no longer insertion order.
    // The candidates come in slot order, so the specification follows the slots the same way.
    const kept = [...entries];
    for (const rowid of entries.filter((_, i) => i % 97 === 5).map((e) => e.rowid)) {
      scan.remove(rowid);
      const slot = kept.findIndex((e) => e.rowid === rowid);
      kept[slot] = kept[kept.length - 1]!;
      kept.pop();
    }
    expect(scan.size).toBe(kept.length);

    let capped = 0;
    for (let q = 0; q < 12; q++) {
      const query = centres[q % centres.length]!.map((x) => x + (next() - 0.5) * 0.4);
      for (const [limit, kind, cap, estimatedTop] of [
        [50, 'episode', 356, 300],
        [10, undefined, 276, 0],
        [20, 'memory', 30, 40],
        [5, 'episode', 4, 5],
        [3_000, undefined, 6_256, 3_000],
      ] as const) {
        const got = scan.candidates(query, limit, kind, cap, estimatedTop);
        const want = reference(kept, query, limit, kind, cap, estimatedTop);
        expect(got.rerank).toEqual(want.rerank);
        expect(got.estimated).toEqual(want.estimated);
        if (want.rerank.length === cap) capped++;
      }
    }
    // The cases above reach the cap (tight clusters and repeated vectors) as well as stay under it.
    expect(capped).toBeGreaterThan(0);
  });
});
