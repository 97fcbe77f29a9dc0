/**
 * The reads of the sqlite-vec index: search (choosing its path by the scope's size), the
 * always-exact search, count and get.
 *
 * A search runs in one read transaction, so the scope's count, the int8 copy's check and the
 * re-ranking see one snapshot of the file even while another process writes.
 */
import { float32View } from './float-vectors';
import { ID_BATCH, placeholders } from './sqlite-vec-file';
import { exactSearch, quantizedSearch } from './sqlite-vec-search';
import type { VecSession } from './sqlite-vec-session';
import { checkScopeIds, checkScopeKind, checkSearchInput, checkVector, hasNoDirection } from './vector-checks';
import type { VectorHit, VectorKind, VectorRecord, VectorSearch } from '../../memory/vectors/vector-index';

/** How one search was served. */
export interface VectorSearchStats {
  /** `exact`: vec0 scan of the float vectors; `quantized`: int8 scan + exact re-ranking. */
  readonly path: 'exact' | 'quantized';
  /** Vectors of the scope that were scored (all of the scope on both paths). */
  readonly scanned: number;
  /** Candidates re-ranked with their float vectors (0 on the exact path). */
  readonly reranked: number;
}

/** sqlite-vec refuses KNN queries with k above 4096; larger limits are clamped to it. */
const MAX_LIMIT = 4096;

/** A checked query's limit (clamped) and vector; null when it can find nothing. */
function checkSearch(session: VecSession, query: VectorSearch): { limit: number; vector: Float32Array } | null {
  checkSearchInput(query);
  const vector = checkVector(query.vector, session.tableDimension(), session.identity()?.embedder, 'The query vector');
  if (query.limit === 0 || hasNoDirection(vector)) return null;
  return { limit: Math.min(query.limit, MAX_LIMIT), vector };
}

/**
 * The best hits of one scope: an exact vec0 scan below `exactScanBelow` vectors, else the int8
 * scan of the scope's in-memory copy with exact re-ranking; `onSearch` hears which.
 */
export function searchVectors(
  session: VecSession,
  query: VectorSearch,
  exactScanBelow: number,
  onSearch: ((stats: VectorSearchStats) => void) | undefined,
): VectorHit[] {
  const { hits, stats } = session.open().transaction(() => {
    session.sync();
    const checked = checkSearch(session, query);
    if (!checked) return { hits: [], stats: null };
    // A current in-memory copy knows the scope's size; otherwise count (~4 ms for 100,000).
    let scan = session.scans.cached(query.scopeId);
    const size = scan ? scan.size : (session.fixed().countScope.get(query.scopeId) as number);
    if (size === 0) return { hits: [], stats: null };
    if (size < exactScanBelow) {
      session.scans.drop(query.scopeId);
      scan = null;
    } else if (!scan) {
      scan = session.scans.load(query.scopeId, size, session.tableDimension());
    }
    if (!scan) {
      const exact = exactSearch(session.vec(), query, checked.limit);
      return { hits: exact, stats: { path: 'exact', scanned: size, reranked: 0 } as const };
    }
    const result = quantizedSearch({
      vec: session.vec(),
      fixed: session.fixed(),
      scan,
      query: { ...query, vector: checked.vector },
      limit: checked.limit,
    });
    return { hits: result.hits, stats: { path: 'quantized', scanned: size, reranked: result.reranked } as const };
  })();
  if (stats) onSearch?.(stats);
  return hits;
}

/** The best hits by a full scan of the scope's float vectors, whatever its size. */
export function searchVectorsExactly(session: VecSession, query: VectorSearch): VectorHit[] {
  session.open();
  session.sync();
  const checked = checkSearch(session, query);
  if (!checked) return [];
  return exactSearch(session.vec(), query, checked.limit);
}

/** How many vectors the scope holds (of one kind, if named). */
export function countVectors(session: VecSession, scopeId: string, kind: VectorKind | undefined): number {
  checkScopeKind(scopeId, kind);
  session.open();
  session.sync();
  const fixed = session.fixed();
  return (kind ? fixed.countScopeKind.get(scopeId, kind) : fixed.countScope.get(scopeId)) as number;
}

/** The stored vectors of the named ids of one scope (ids it does not hold are left out). */
export function getVectors(session: VecSession, scopeId: string, ids: readonly string[]): VectorRecord[] {
  checkScopeIds(scopeId, ids);
  const connection = session.open();
  session.sync();
  const records: VectorRecord[] = [];
  if (ids.length === 0) return records;
  connection.transaction(() => {
    const v = session.vec();
    const unique = [...new Set(ids)];
    for (let start = 0; start < unique.length; start += ID_BATCH) {
      const batch = unique.slice(start, start + ID_BATCH);
      const rows = connection.prepare(`SELECT rowid, id, kind FROM items WHERE scope_id = ? AND id IN (${placeholders(batch)})`).all(scopeId, ...batch) as {
        rowid: number;
        id: string;
        kind: VectorKind;
      }[];
      for (const row of rows) {
        const blob = v.vector.get(row.rowid) as Buffer | undefined;
        // A copy: the view over the blob would alias memory better-sqlite3 reuses.
        if (!blob) continue;
        records.push({ id: row.id, kind: row.kind, scopeId, vector: Float32Array.from(float32View(blob)) });
      }
    }
  })();
  return records;
}
