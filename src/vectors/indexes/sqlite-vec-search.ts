/**
 * The two search paths of the sqlite-vec index, given its statements; both return cosine
 * similarity, best first.
 *
 * The paths:
 * - Exact (scopes under `exactScanBelow`, 5,000 by default): a vec0 KNN query, i.e. a scan of the
 *   scope's float vectors. About 5 ms for 5,000 × 512 here.
 * - Quantized (larger scopes): the scope's int8 codes are kept in memory (512 bytes per vector of
 *   512 dimensions) and scanned by a small WebAssembly SIMD kernel (100,000 × 512 in ~4.5 ms on
 *   this 2-core machine, where a JavaScript float loop takes ~55 ms and sqlite-vec's float scan
 *   ~100 ms). From the int8 scores and their error bound the index keeps every vector that could
 *   still be in the true top `limit`, then re-ranks those by exact cosine against the float
 *   vectors in vec0. The result is the exact top `limit` unless a rounding error exceeds six
 *   standard deviations, or the candidate cap (see {@link rerankCap}) is reached, which happens in
 *   very tight clusters (near-duplicates by the thousand).
 *
 * Why not sqlite-vec's own quantized columns: measured on 100k × 512, `bit[512]` KNN costs 28 ms at
 * k = 200 and 64 ms at k = 400 (its top-k selection is O(n·k)), and sign bits cannot order
 * neighbours that are close together: with 1,000 re-ranked candidates the top-10 came out exact
 * for 0-2 % of queries on uniform data and 0-1 % on tight clusters. `int8[512]` KNN takes ~130 ms.
 */
import { dot, float32View, floatBlob, norm } from './float-vectors';
import type { ScopeScan } from './int8-scope-scan';
import type { FixedStatements, VecStatements } from './sqlite-vec-file';
import type { VectorHit, VectorKind, VectorSearch } from '../../memory/vectors/vector-index';

/** Candidates re-ranked at most: bounds latency when many vectors tie within the error bound. */
function rerankCap(limit: number): number {
  return 2 * limit + 256;
}

/** The exact top `limit` of the scope by a vec0 KNN query (sqlite-vec reports cosine distance). */
export function exactSearch(vec: VecStatements, query: VectorSearch, limit: number): VectorHit[] {
  const blob = floatBlob(query.vector);
  const rows = (query.kind ? vec.knnKind.all(blob, limit, query.scopeId, query.kind) : vec.knn.all(blob, limit, query.scopeId)) as {
    id: string;
    kind: VectorKind;
    distance: number;
  }[];
  return rows.map((row) => ({ id: row.id, kind: row.kind, score: 1 - row.distance }));
}

/** What the quantized path reads: the statements of the file and the scope's int8 copy. */
export interface QuantizedSearchParams {
  readonly vec: VecStatements;
  readonly fixed: FixedStatements;
  readonly scan: ScopeScan;
  readonly query: VectorSearch;
  readonly limit: number;
}

/**
 * The int8 scan, then exact cosines for the candidates of the best `exactTop` (each re-ranked
 * vector is a vec0 lookup, ~16 µs: 5 ms for the ~325 candidates of a top 300 at 100,000
 * vectors); with `exactTop` below `limit`, the rest of the top `limit` by int8 estimate follow,
 * with their estimates.
 */
export function quantizedSearch({ vec, fixed, scan, query, limit }: QuantizedSearchParams): {
  hits: VectorHit[];
  reranked: number;
} {
  const exactTop = Math.max(1, Math.min(limit, query.exactTop ?? limit));
  const estimatedTop = exactTop < limit ? limit : 0;
  const { rerank: rowids, estimated } = scan.candidates(query.vector, exactTop, query.kind, rerankCap(exactTop), estimatedTop);
  const queryNorm = norm(query.vector);
  const scored: { rowid: number; score: number }[] = [];
  for (const rowid of rowids) {
    const blob = vec.vector.get(rowid) as Buffer | undefined;
    if (!blob) continue;
    const stored = float32View(blob);
    scored.push({ rowid, score: dot(query.vector, stored) / (queryNorm * norm(stored)) });
  }
  scored.sort((a, b) => b.score - a.score || a.rowid - b.rowid);
  const ranked = scored.slice(0, exactTop);
  if (ranked.length < limit) {
    const exact = new Set(ranked.map((r) => r.rowid));
    for (const e of estimated) {
      if (ranked.length >= limit) break;
      if (!exact.has(e.rowid)) ranked.push(e);
    }
  }
  // The hits' ids in one statement: a lookup per hit cost ~3-5 µs each for the 300 of a search.
  const items = new Map(
    (fixed.itemsByRowids.all(JSON.stringify(ranked.map((r) => r.rowid)), query.scopeId) as Array<{ rowid: number; id: string; kind: VectorKind }>).map(
      (item) => [item.rowid, item],
    ),
  );
  const hits: VectorHit[] = [];
  for (const { rowid, score } of ranked) {
    const item = items.get(rowid);
    if (item) hits.push({ id: item.id, kind: item.kind, score });
  }
  return { hits, reranked: rowids.length };
}
