/**
 * The embedded VectorIndex: sqlite-vec in a SQLite file of its own (`DATA_DIR/vectors.db`).
 *
 * Why a separate file: the sqlite-vec extension has to be loaded into the connection, which the
 * Prisma adapter of the main database cannot do; and the vectors are derived data (they can always
 * be rebuilt from episodes and memories), so a lost or mismatched file costs a reindex, never data.
 *
 * Tables:
 * - `meta`: file format, the recorded identity (embedder, dimension) and an `epoch` that changes
 *   whenever everything is dropped (clear, a new identity), so other processes on the file notice.
 * - `items`: one row per vector: the integer rowid sqlite-vec needs ↔ (scope_id, id), the kind, and
 *   an int8 copy of the vector (`code`, `scale`) that the fast path scans. Ids are unique per scope,
 *   not globally, so an upsert can never overwrite another scope's vector.
 * - `vec_items`: vec0 virtual table with `scope_id` as partition key (sqlite-vec then reads only
 *   that scope's chunks, and every KNN query here names the scope), `kind` as a metadata column and
 *   the float vectors with cosine distance. Its dimension is fixed when it is created; a new
 *   identity drops and recreates it (the caller then re-embeds).
 * - `scope_versions`: bumped by every write to a scope, so a process can tell that its in-memory
 *   copy of a scope is stale after another process wrote to the file.
 *
 * Search has two paths:
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
 *
 * Memory: the int8 copies of all scopes together stay under `scanMemoryBytes` (512 MiB by default,
 * about one million 512-dimension vectors); the least recently searched scopes are dropped first,
 * and a scope too large to fit is searched exactly (slow, still correct).
 *
 * Concurrency: WAL and a busy timeout let several processes share the file. A process notices
 * another's commits through `PRAGMA data_version` and then rechecks the identity, the epoch and the
 * version of the scope it searches, reloading its in-memory copy when it changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { AppError, StorageError, ValidationError } from '../../shared/errors';
import { unlockSqlite } from '../../storage/sqlite-encryption';
import type { IndexIdentity, VectorHit, VectorIndex, VectorKind, VectorRecord, VectorSearch } from './vector-index';

export interface SqliteVecVectorIndexOptions {
  /** The SQLite file of the index, e.g. `DATA_DIR/vectors.db`; its folder is created if needed. */
  readonly file: string;
  /**
   * Dimension of the vector table when the file is new (the configured embedder's). A later
   * {@link VectorIndex.setIdentity} with another dimension recreates the table.
   */
  readonly dimension: number;
  /** Scopes with fewer vectors are searched by an exact scan of their float vectors (default 5,000). */
  readonly exactScanBelow?: number;
  /** RAM the in-memory int8 copies of large scopes may use together (default 512 MiB). */
  readonly scanMemoryBytes?: number;
  /** How long a write waits for another process's lock (default 10 s). */
  readonly busyTimeoutMs?: number;
  /** DATABASE_ENCRYPTION_KEY: the file is encrypted like the database (src/storage/sqlite-encryption.ts). */
  readonly encryptionKey?: string;
  /** Called after every search with how it was served (for benchmarks, tests and logs). */
  readonly onSearch?: (stats: VectorSearchStats) => void;
}

/** How one search was served. */
export interface VectorSearchStats {
  /** `exact`: vec0 scan of the float vectors; `quantized`: int8 scan + exact re-ranking. */
  readonly path: 'exact' | 'quantized';
  /** Vectors of the scope that were scored (all of the scope on both paths). */
  readonly scanned: number;
  /** Candidates re-ranked with their float vectors (0 on the exact path). */
  readonly reranked: number;
}

/** The sqlite-vec adapter, plus an always-exact search for benchmarks and agreement checks. */
export interface SqliteVecVectorIndex extends VectorIndex {
  /** Same as `search`, but always a full scan of the scope's float vectors. */
  searchExact(query: VectorSearch): Promise<VectorHit[]>;
}

const FORMAT = '1';
const DEFAULT_EXACT_SCAN_BELOW = 5_000;
const DEFAULT_SCAN_MEMORY_BYTES = 512 * 1024 * 1024;
const DEFAULT_BUSY_TIMEOUT_MS = 10_000;
/** sqlite-vec refuses KNN queries with k above 4096; larger limits are clamped to it. */
const MAX_LIMIT = 4096;
const MAX_DIMENSION = 8192;
/**
 * Vectors per vec0 chunk. Small chunks keep a new scope's partition small (32 × 2 KiB at 512
 * dimensions) and make re-ranking lookups cheap (~20 µs, against ~340 µs with the default 1,024,
 * because sqlite-vec reads a vector through an incremental blob of the whole chunk).
 */
const CHUNK_SIZE = 32;
/** Width of the error bound around an int8 score, in standard deviations of the rounding error. */
const ERROR_SIGMAS = 6;
const KIND_CODES: Record<VectorKind, number> = { episode: 0, memory: 1 };
const ID_BATCH = 500;

/** Candidates re-ranked at most: bounds latency when many vectors tie within the error bound. */
function rerankCap(limit: number): number {
  return 2 * limit + 256;
}

/** Creates the adapter; nothing is opened until {@link VectorIndex.init}. */
export function createSqliteVecVectorIndex(options: SqliteVecVectorIndexOptions): SqliteVecVectorIndex {
  checkDimension(options.dimension);
  const exactScanBelow = options.exactScanBelow ?? DEFAULT_EXACT_SCAN_BELOW;
  const scanMemoryBytes = options.scanMemoryBytes ?? DEFAULT_SCAN_MEMORY_BYTES;
  const file = options.file;

  let db: Database.Database | null = null;
  let closed = false;
  let stmts: FixedStatements | null = null;
  let vecStmts: VecStatements | null = null;
  let identity: IndexIdentity | null = null;
  let tableDimension = options.dimension;
  let epoch = 0;
  let dataVersion = -1;
  const scans = new Map<string, ScopeScan>();
  let useCounter = 0;

  function open(): Database.Database {
    if (closed) throw new AppError('The vector index is closed.', { code: 'vectors.closed', category: 'system' });
    if (!db) {
      throw new AppError('The vector index is used before init().', {
        code: 'vectors.not_initialized',
        category: 'system',
        hint: 'Call init() once before any other method.',
      });
    }
    return db;
  }

  function fixed(): FixedStatements {
    open();
    return stmts!;
  }

  function vec(): VecStatements {
    const connection = open();
    if (!vecStmts) vecStmts = prepareVecStatements(connection);
    return vecStmts;
  }

  /** Rereads what another process may have changed since this connection last looked. */
  function sync(): void {
    const current = fixed().dataVersion.get() as number;
    if (current === dataVersion) return;
    dataVersion = current;
    readMeta();
  }

  function readMeta(): void {
    const meta = new Map((fixed().metaAll.all() as { key: string; value: string }[]).map((row) => [row.key, row.value]));
    const nextEpoch = Number(meta.get('epoch') ?? '0');
    const nextDimension = Number(meta.get('dimension') ?? String(tableDimension));
    if (nextEpoch !== epoch || nextDimension !== tableDimension) {
      scans.clear();
      vecStmts = null;
    }
    epoch = nextEpoch;
    tableDimension = nextDimension;
    const embedder = meta.get('embedder');
    identity = embedder === undefined ? null : { embedder, dimension: tableDimension };
  }

  function createVecTable(connection: Database.Database, dimension: number): void {
    connection.exec(
      `CREATE VIRTUAL TABLE IF NOT EXISTS vec_items USING vec0(` +
        `scope_id text partition key, kind text, embedding float[${dimension}] distance_metric=cosine, chunk_size=${CHUNK_SIZE})`,
    );
    // sqlite-vec 0.1.9 finds a partition's chunks (on every KNN query and insert) by scanning its
    // whole chunk table: with 400,000 vectors that is 12,500 rows and ~2 ms per query, growing with
    // the file. An index on the partition column of that shadow table makes it a lookup. Skipped
    // if a later sqlite-vec names its shadow tables differently (only speed depends on it).
    const columns = connection.prepare("SELECT name FROM pragma_table_info('vec_items_chunks')").pluck().all();
    if (columns.includes('partition00')) {
      connection.exec('CREATE INDEX IF NOT EXISTS vec_items_chunks_by_scope ON vec_items_chunks (partition00, chunk_id)');
    }
  }

  /** Empties everything in one transaction, optionally with a table of a new dimension. */
  function dropAll(connection: Database.Database, dimension: number): void {
    vecStmts = null;
    connection.exec('DROP TABLE IF EXISTS vec_items');
    connection.exec('DELETE FROM items');
    createVecTable(connection, dimension);
    const s = fixed();
    s.metaSet.run('dimension', String(dimension));
    s.metaSet.run('epoch', String(epoch + 1));
  }

  function bumpVersion(scopeId: string): number {
    return fixed().bumpVersion.get(scopeId) as number;
  }

  function requireIdentity(): IndexIdentity {
    if (!identity) {
      throw new AppError('The vector index has no identity yet.', {
        code: 'vectors.identity_missing',
        category: 'system',
        hint: 'Call setIdentity({ embedder, dimension }) before storing vectors.',
      });
    }
    return identity;
  }

  function checkRecordVector(vector: unknown, what: string): Float32Array {
    return checkVector(vector, tableDimension, identity?.embedder, what);
  }

  // ---- in-memory int8 copies of large scopes ----

  function scanBytesInUse(): number {
    let total = 0;
    for (const scan of scans.values()) total += scan.bytes();
    return total;
  }

  /** Drops the least recently used copies (never `keep`) until `needed` more bytes fit. */
  function makeRoom(needed: number, keep?: string): boolean {
    let inUse = scanBytesInUse();
    if (needed > scanMemoryBytes) return false;
    const byAge = [...scans.entries()].filter(([scopeId]) => scopeId !== keep).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [scopeId, scan] of byAge) {
      if (inUse + needed <= scanMemoryBytes) break;
      inUse -= scan.bytes();
      scans.delete(scopeId);
    }
    return inUse + needed <= scanMemoryBytes;
  }

  /** The in-memory copy of a scope if there is one and it is current (a stale one is dropped). */
  function cachedScan(scopeId: string): ScopeScan | null {
    const scan = scans.get(scopeId);
    if (!scan) return null;
    if (scan.verifiedAt !== dataVersion) {
      const version = (fixed().readVersion.get(scopeId) as number | undefined) ?? 0;
      if (version !== scan.version) {
        scans.delete(scopeId);
        return null;
      }
      scan.verifiedAt = dataVersion;
    }
    scan.lastUsed = ++useCounter;
    return scan;
  }

  /** Loads a scope's int8 codes into memory; null without WebAssembly SIMD or room in the budget. */
  function loadScan(scopeId: string, size: number): ScopeScan | null {
    const kernel = int8DotKernel();
    if (!kernel || !makeRoom(estimateScanBytes(size, tableDimension), scopeId)) return null;
    // The version is read in the same read transaction as the rows, so they agree.
    const scan = open().transaction(() => {
      const loaded = createScopeScan(kernel, tableDimension, size);
      for (const [rowid, kind, code, scale] of fixed().loadScope.iterate(scopeId) as Iterable<[number, VectorKind, Buffer, number]>) {
        loaded.set(rowid, kind, code, scale);
      }
      loaded.version = (fixed().readVersion.get(scopeId) as number | undefined) ?? 0;
      loaded.verifiedAt = dataVersion;
      return loaded;
    })();
    scan.lastUsed = ++useCounter;
    scans.set(scopeId, scan);
    return scan;
  }

  /** Applies this process's own committed writes to the in-memory copy (or drops it if it fell behind). */
  function afterWrite(scopeId: string, version: number, apply: (scan: ScopeScan) => void): void {
    const scan = scans.get(scopeId);
    if (!scan) return;
    if (scan.version !== version - 1) {
      scans.delete(scopeId);
      return;
    }
    apply(scan);
    scan.version = version;
    if (!makeRoom(0, scopeId)) scans.delete(scopeId);
  }

  // ---- search paths ----

  function exactSearch(query: VectorSearch, limit: number): VectorHit[] {
    const s = vec();
    const blob = floatBlob(query.vector);
    const rows = (
      query.kind ? s.knnKind.all(blob, limit, query.scopeId, query.kind) : s.knn.all(blob, limit, query.scopeId)
    ) as { id: string; kind: VectorKind; distance: number }[];
    return rows.map((row) => ({ id: row.id, kind: row.kind, score: 1 - row.distance }));
  }

  /**
   * The int8 scan, then exact cosines for the candidates of the best `exactTop` (each re-ranked
   * vector is a vec0 lookup, ~16 µs: 5 ms for the ~325 candidates of a top 300 at 100,000
   * vectors); with `exactTop` below `limit`, the rest of the top `limit` by int8 estimate follow,
   * with their estimates.
   */
  function quantizedSearch(scan: ScopeScan, query: VectorSearch, limit: number): { hits: VectorHit[]; reranked: number } {
    const exactTop = Math.max(1, Math.min(limit, query.exactTop ?? limit));
    const { rerank: rowids, estimated } = scan.candidates(query.vector, exactTop, query.kind, rerankCap(exactTop), exactTop < limit ? limit : 0);
    const s = vec();
    const queryNorm = norm(query.vector);
    const scored: { rowid: number; score: number }[] = [];
    for (const rowid of rowids) {
      const blob = s.vector.get(rowid) as Buffer | undefined;
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
    const hits: VectorHit[] = [];
    for (const { rowid, score } of ranked) {
      const item = fixed().itemByRowid.get(rowid, query.scopeId) as { id: string; kind: VectorKind } | undefined;
      if (item) hits.push({ id: item.id, kind: item.kind, score });
    }
    return { hits, reranked: rowids.length };
  }

  function checkSearch(query: VectorSearch): { limit: number; vector: Float32Array } | null {
    checkScope(query.scopeId);
    if (query.kind !== undefined) checkKind(query.kind);
    if (!Number.isInteger(query.limit) || query.limit < 0) {
      throw new ValidationError(`A search limit must be a whole number of 0 or more, got ${String(query.limit)}.`, { code: 'vectors.invalid_limit' });
    }
    const vector = checkVector(query.vector, tableDimension, identity?.embedder, 'The query vector');
    if (query.limit === 0 || norm(vector) === 0) return null;
    return { limit: Math.min(query.limit, MAX_LIMIT), vector };
  }

  function storageCall<T>(what: string, work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(toVectorError(error, what, file));
    }
  }

  return {
    init: () =>
      storageCall('open the vector index', () => {
        if (closed) throw new AppError('The vector index is closed.', { code: 'vectors.closed', category: 'system' });
        if (!db) {
          fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
          let connection: Database.Database;
          try {
            connection = new Database(file);
            sqliteVec.load(connection);
          } catch (error) {
            throw new StorageError(`Cannot open the vector index ${file}: ${errorMessage(error)}`, {
              code: 'vectors.unavailable',
              cause: error,
              hint: `Check that ${file} (DATA_DIR/vectors.db) is a readable and writable SQLite file and that the sqlite-vec package is installed for this platform; the file can be deleted and rebuilt with a reindex.`,
            });
          }
          try {
            // The key first: nothing can read an encrypted file before it.
            try {
              unlockSqlite(connection, file, options.encryptionKey);
            } catch (error) {
              // Still an index that cannot be used (the service goes on by keywords), with the reason.
              throw new StorageError(`Cannot open the vector index: ${errorMessage(error)}`, {
                code: 'vectors.unavailable',
                cause: error,
                hint: `${(error as { hint?: string }).hint ?? ''} A damaged ${file} (DATA_DIR/vectors.db) can be deleted and rebuilt with a reindex.`.trim(),
              });
            }
            connection.pragma(`busy_timeout = ${options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS}`);
            connection.pragma('journal_mode = WAL');
            connection.pragma('synchronous = NORMAL');
            // A forgotten vector and its row are zeroed in the file, not left in free pages.
            connection.pragma('secure_delete = ON');
            // 64 MiB of page cache (default 2 MiB): writes spread over many scopes touch the last
            // chunk of each, and re-ranking reads vectors all over the file.
            connection.pragma('cache_size = -65536');
            db = connection;
            connection.transaction(() => {
              connection.exec(SCHEMA);
              stmts = prepareFixedStatements(connection);
              const format = stmts.metaGet.get('format') as string | undefined;
              if (format !== undefined && format !== FORMAT) {
                throw new StorageError(`The vector index ${file} has format ${format}, this version reads format ${FORMAT}.`, {
                  code: 'vectors.format_unsupported',
                  hint: `Delete ${file} and run a reindex to rebuild it.`,
                });
              }
              if (format === undefined) {
                stmts.metaSet.run('format', FORMAT);
                stmts.metaSet.run('dimension', String(options.dimension));
                stmts.metaSet.run('epoch', '0');
              }
              const dimension = Number(stmts.metaGet.get('dimension'));
              createVecTable(connection, dimension);
            }).immediate();
          } catch (error) {
            connection.close();
            db = null;
            stmts = null;
            throw error;
          }
        }
        dataVersion = -1;
        sync();
        return identity;
      }),

    setIdentity: (next) =>
      storageCall('record the index identity', () => {
        if (typeof next?.embedder !== 'string' || next.embedder.trim() === '') {
          throw new ValidationError('An index identity needs the embedder name.', { code: 'vectors.invalid_identity' });
        }
        checkDimension(next.dimension);
        const connection = open();
        connection.transaction(() => {
          sync();
          if (identity && identity.embedder === next.embedder && identity.dimension === next.dimension) return;
          const empty = (fixed().anyItem.get() as number | undefined) === undefined;
          if (!(identity === null && empty && tableDimension === next.dimension)) dropAll(connection, next.dimension);
          fixed().metaSet.run('embedder', next.embedder);
          fixed().metaSet.run('dimension', String(next.dimension));
        }).immediate();
        readMeta();
      }),

    upsert: (records) =>
      storageCall('store vectors', () => {
        const connection = open();
        sync();
        const current = requireIdentity();
        // Validate the whole batch before writing anything; the last record of an id wins.
        const latest = new Map<string, VectorRecord>();
        for (const record of records) {
          checkScope(record.scopeId);
          checkId(record.id);
          checkKind(record.kind);
          const vector = checkRecordVector(record.vector, `The vector of ${record.kind} ${record.id}`);
          if (norm(vector) === 0) {
            throw new ValidationError(`The vector of ${record.kind} ${record.id} is all zeros; it has no direction to compare.`, {
              code: 'vectors.invalid_vector',
            });
          }
          latest.set(`${record.scopeId}\u0000${record.id}`, record);
        }
        if (latest.size === 0) return;
        const changes = new Map<string, { version: number; set: { rowid: number; kind: VectorKind; code: Buffer; scale: number }[] }>();
        connection.transaction(() => {
          sync();
          if (identity?.embedder !== current.embedder || identity.dimension !== current.dimension) requireSameIdentity(current, identity);
          const s = fixed();
          const v = vec();
          for (const record of latest.values()) {
            const { code, scale } = quantize(record.vector);
            const blob = floatBlob(record.vector);
            const existing = s.itemByKey.get(record.scopeId, record.id) as { rowid: number } | undefined;
            let rowid: number;
            if (existing) {
              rowid = existing.rowid;
              s.updateItem.run(record.kind, code, scale, rowid);
              v.update.run(blob, record.kind, BigInt(rowid));
            } else {
              rowid = Number(s.insertItem.run(record.scopeId, record.id, record.kind, code, scale).lastInsertRowid);
              v.insert.run(BigInt(rowid), record.scopeId, record.kind, blob);
            }
            let change = changes.get(record.scopeId);
            if (!change) changes.set(record.scopeId, (change = { version: 0, set: [] }));
            change.set.push({ rowid, kind: record.kind, code, scale });
          }
          for (const [scopeId, change] of changes) change.version = bumpVersion(scopeId);
        }).immediate();
        for (const [scopeId, change] of changes) {
          afterWrite(scopeId, change.version, (scan) => {
            for (const item of change.set) scan.set(item.rowid, item.kind, item.code, item.scale);
          });
        }
      }),

    delete: (scopeId, ids) =>
      storageCall('delete vectors', () => {
        checkScope(scopeId);
        ids.forEach(checkId);
        const connection = open();
        sync();
        if (ids.length === 0) return;
        const removed: number[] = [];
        const version = connection.transaction(() => {
          const v = vec();
          for (let start = 0; start < ids.length; start += ID_BATCH) {
            const batch = [...new Set(ids.slice(start, start + ID_BATCH))];
            const rows = connection
              .prepare(`SELECT rowid FROM items WHERE scope_id = ? AND id IN (${batch.map(() => '?').join(',')})`)
              .pluck()
              .all(scopeId, ...batch) as number[];
            for (const rowid of rows) {
              v.delete.run(BigInt(rowid));
              fixed().deleteItem.run(rowid, scopeId);
              removed.push(rowid);
            }
          }
          return removed.length > 0 ? bumpVersion(scopeId) : null;
        }).immediate();
        if (version !== null) afterWrite(scopeId, version, (scan) => removed.forEach((rowid) => scan.remove(rowid)));
      }),

    deleteScope: (scopeId) =>
      storageCall('delete a scope’s vectors', () => {
        checkScope(scopeId);
        const connection = open();
        sync();
        connection.transaction(() => {
          const v = vec();
          const rowids = fixed().scopeRowids.all(scopeId) as number[];
          for (const rowid of rowids) v.delete.run(BigInt(rowid));
          fixed().deleteScopeItems.run(scopeId);
          if (rowids.length > 0) bumpVersion(scopeId);
        }).immediate();
        scans.delete(scopeId);
      }),

    clear: () =>
      storageCall('clear the vector index', () => {
        const connection = open();
        connection.transaction(() => {
          sync();
          dropAll(connection, tableDimension);
          fixed().metaDelete.run('embedder');
        }).immediate();
        scans.clear();
        readMeta();
      }),

    search: (query) =>
      storageCall('search vectors', () => {
        // One read transaction: the count, the int8 copy's check and the re-ranking see one snapshot.
        const { hits, stats } = open().transaction(() => {
          sync();
          const checked = checkSearch(query);
          if (!checked) return { hits: [], stats: null };
          // A current in-memory copy knows the scope's size; otherwise count (~4 ms for 100,000).
          let scan = cachedScan(query.scopeId);
          const size = scan ? scan.size : (fixed().countScope.get(query.scopeId) as number);
          if (size === 0) return { hits: [], stats: null };
          if (size < exactScanBelow) {
            scans.delete(query.scopeId);
            scan = null;
          } else if (!scan) {
            scan = loadScan(query.scopeId, size);
          }
          if (!scan) return { hits: exactSearch(query, checked.limit), stats: { path: 'exact', scanned: size, reranked: 0 } as const };
          const result = quantizedSearch(scan, { ...query, vector: checked.vector }, checked.limit);
          return { hits: result.hits, stats: { path: 'quantized', scanned: size, reranked: result.reranked } as const };
        })();
        if (stats) options.onSearch?.(stats);
        return hits;
      }),

    searchExact: (query) =>
      storageCall('search vectors', () => {
        open();
        sync();
        const checked = checkSearch(query);
        if (!checked) return [];
        return exactSearch(query, checked.limit);
      }),

    count: (scopeId, kind) =>
      storageCall('count vectors', () => {
        checkScope(scopeId);
        if (kind !== undefined) checkKind(kind);
        open();
        sync();
        return (kind ? fixed().countScopeKind.get(scopeId, kind) : fixed().countScope.get(scopeId)) as number;
      }),

    get: (scopeId, ids) =>
      storageCall('read vectors', () => {
        checkScope(scopeId);
        ids.forEach(checkId);
        const connection = open();
        sync();
        const records: VectorRecord[] = [];
        if (ids.length === 0) return records;
        connection.transaction(() => {
          const v = vec();
          const unique = [...new Set(ids)];
          for (let start = 0; start < unique.length; start += ID_BATCH) {
            const batch = unique.slice(start, start + ID_BATCH);
            const rows = connection
              .prepare(`SELECT rowid, id, kind FROM items WHERE scope_id = ? AND id IN (${batch.map(() => '?').join(',')})`)
              .all(scopeId, ...batch) as { rowid: number; id: string; kind: VectorKind }[];
            for (const row of rows) {
              const blob = v.vector.get(row.rowid) as Buffer | undefined;
              // A copy: the view over the blob would alias memory better-sqlite3 reuses.
              if (blob) records.push({ id: row.id, kind: row.kind, scopeId, vector: Float32Array.from(float32View(blob)) });
            }
          }
        })();
        return records;
      }),

    checkpoint: () =>
      storageCall('checkpoint the vector index', () => {
        // TRUNCATE waits for readers through the busy timeout set at open.
        const [row] = open().pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
        return row?.busy === 0;
      }),

    close: () =>
      storageCall('close the vector index', () => {
        closed = true;
        scans.clear();
        vecStmts = null;
        stmts = null;
        db?.close();
        db = null;
      }),
  };
}

// ---- schema and statements ----

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
  rowid INTEGER PRIMARY KEY,
  scope_id TEXT NOT NULL,
  id TEXT NOT NULL,
  kind TEXT NOT NULL,
  code BLOB NOT NULL,
  scale REAL NOT NULL,
  UNIQUE (scope_id, id)
);
CREATE INDEX IF NOT EXISTS items_scope_kind ON items (scope_id, kind);
CREATE TABLE IF NOT EXISTS scope_versions (scope_id TEXT PRIMARY KEY, version INTEGER NOT NULL);
`;

function prepareFixedStatements(db: Database.Database) {
  return {
    dataVersion: db.prepare('PRAGMA data_version').pluck(),
    metaAll: db.prepare('SELECT key, value FROM meta'),
    metaGet: db.prepare('SELECT value FROM meta WHERE key = ?').pluck(),
    metaSet: db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    metaDelete: db.prepare('DELETE FROM meta WHERE key = ?'),
    anyItem: db.prepare('SELECT 1 FROM items LIMIT 1').pluck(),
    itemByKey: db.prepare('SELECT rowid FROM items WHERE scope_id = ? AND id = ?'),
    itemByRowid: db.prepare('SELECT id, kind FROM items WHERE rowid = ? AND scope_id = ?'),
    insertItem: db.prepare('INSERT INTO items (scope_id, id, kind, code, scale) VALUES (?, ?, ?, ?, ?)'),
    updateItem: db.prepare('UPDATE items SET kind = ?, code = ?, scale = ? WHERE rowid = ?'),
    deleteItem: db.prepare('DELETE FROM items WHERE rowid = ? AND scope_id = ?'),
    deleteScopeItems: db.prepare('DELETE FROM items WHERE scope_id = ?'),
    scopeRowids: db.prepare('SELECT rowid FROM items WHERE scope_id = ?').pluck(),
    countScope: db.prepare('SELECT count(*) FROM items WHERE scope_id = ?').pluck(),
    countScopeKind: db.prepare('SELECT count(*) FROM items WHERE scope_id = ? AND kind = ?').pluck(),
    loadScope: db.prepare('SELECT rowid, kind, code, scale FROM items INDEXED BY items_scope_kind WHERE scope_id = ?').raw(),
    readVersion: db.prepare('SELECT version FROM scope_versions WHERE scope_id = ?').pluck(),
    bumpVersion: db
      .prepare(
        'INSERT INTO scope_versions (scope_id, version) VALUES (?, 1) ON CONFLICT (scope_id) DO UPDATE SET version = version + 1 RETURNING version',
      )
      .pluck(),
  };
}
type FixedStatements = ReturnType<typeof prepareFixedStatements>;

/** Statements on the vec0 table; prepared again whenever the table is recreated. */
function prepareVecStatements(db: Database.Database) {
  const knn = (kindFilter: string) =>
    db.prepare(
      `SELECT items.id AS id, items.kind AS kind, knn.distance AS distance FROM (` +
        `SELECT rowid, distance FROM vec_items WHERE embedding MATCH ? AND k = ? AND scope_id = ?${kindFilter}` +
        `) AS knn JOIN items ON items.rowid = knn.rowid ORDER BY knn.distance, items.rowid`,
    );
  return {
    knn: knn(''),
    knnKind: knn(' AND kind = ?'),
    vector: db.prepare('SELECT embedding FROM vec_items WHERE rowid = ?').pluck(),
    insert: db.prepare('INSERT INTO vec_items (rowid, scope_id, kind, embedding) VALUES (?, ?, ?, ?)'),
    update: db.prepare('UPDATE vec_items SET embedding = ?, kind = ? WHERE rowid = ?'),
    delete: db.prepare('DELETE FROM vec_items WHERE rowid = ?'),
  };
}
type VecStatements = ReturnType<typeof prepareVecStatements>;

// ---- validation and errors ----

function checkDimension(dimension: unknown): void {
  if (!Number.isInteger(dimension) || (dimension as number) < 1 || (dimension as number) > MAX_DIMENSION) {
    throw new ValidationError(`A vector dimension must be a whole number from 1 to ${MAX_DIMENSION}, got ${String(dimension)}.`, {
      code: 'vectors.invalid_dimension',
    });
  }
}

function checkScope(scopeId: unknown): void {
  if (typeof scopeId !== 'string' || scopeId === '') {
    throw new ValidationError('Every vector operation names one scope (a non-empty scope id).', { code: 'vectors.invalid_scope' });
  }
}

function checkId(id: unknown): void {
  if (typeof id !== 'string' || id === '') throw new ValidationError('A vector id must be a non-empty string.', { code: 'vectors.invalid_id' });
}

function checkKind(kind: unknown): void {
  if (kind !== 'episode' && kind !== 'memory') {
    throw new ValidationError(`A vector kind is "episode" or "memory", got ${JSON.stringify(kind)}.`, { code: 'vectors.invalid_kind' });
  }
}

function checkVector(vector: unknown, dimension: number, embedder: string | undefined, what: string): Float32Array {
  if (!(vector instanceof Float32Array)) {
    throw new ValidationError(`${what} must be a Float32Array.`, { code: 'vectors.invalid_vector' });
  }
  if (vector.length !== dimension) {
    throw new AppError(`${what} has ${vector.length} dimensions; the index holds ${dimension}-dimension vectors${embedder ? ` of ${embedder}` : ''}.`, {
      code: 'vectors.dimension_mismatch',
      category: 'system',
      hint: 'The embedder changed since the index was built: run a reindex (setIdentity with the new embedder, then re-embed) before storing or searching its vectors.',
      details: { expected: dimension, received: vector.length },
    });
  }
  for (let i = 0; i < vector.length; i++) {
    if (!Number.isFinite(vector[i]!)) throw new ValidationError(`${what} contains a value that is not a finite number.`, { code: 'vectors.invalid_vector' });
  }
  return vector;
}

/** Another process gave the index a new identity between this call's checks and its write. */
function requireSameIdentity(expected: IndexIdentity, actual: IndexIdentity | null): never {
  throw new AppError(
    `The vector index identity changed while storing (expected ${expected.embedder}/${expected.dimension}, found ${actual ? `${actual.embedder}/${actual.dimension}` : 'none'}).`,
    { code: 'vectors.identity_changed', category: 'system', hint: 'Another process started a reindex; retry after it finishes.' },
  );
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function toVectorError(error: unknown, what: string, file: string): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new StorageError(`Could not ${what}: the vector index is locked by another process.`, {
      code: 'vectors.busy',
      cause: error,
      hint: `Another Nocturne process holds ${file} (DATA_DIR/vectors.db) for too long; retry, or stop the other process.`,
    });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY') {
    return new StorageError(`Could not ${what}: ${file} cannot be used as the vector index (${errorMessage(error)}).`, {
      code: 'vectors.unavailable',
      cause: error,
      hint: `Check that ${file} (DATA_DIR/vectors.db) is a writable SQLite file; if it is damaged, delete it and run a reindex to rebuild it.`,
    });
  }
  return new StorageError(`Could not ${what}: ${errorMessage(error)}`, {
    code: 'vectors.storage_failed',
    cause: error,
    hint: `Check the disk and the file ${file} (DATA_DIR/vectors.db); it can be deleted and rebuilt with a reindex.`,
  });
}

// ---- vectors ----

function norm(vector: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}

function dot(a: Float32Array, b: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n = a.length - (a.length % 4);
  let i = 0;
  for (; i < n; i += 4) {
    s0 += a[i]! * b[i]!;
    s1 += a[i + 1]! * b[i + 1]!;
    s2 += a[i + 2]! * b[i + 2]!;
    s3 += a[i + 3]! * b[i + 3]!;
  }
  for (; i < a.length; i++) s0 += a[i]! * b[i]!;
  return s0 + s1 + s2 + s3;
}

function floatBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

function float32View(blob: Buffer): Float32Array {
  if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
  return new Float32Array(new Uint8Array(blob).buffer);
}

/**
 * The int8 code of a vector, normalized first: code[i] = round(v[i] / |v| / scale), with the scale
 * chosen so the largest component maps to ±127 (so the rounding error of each component is at most
 * scale / 2).
 */
function quantize(vector: Float32Array): { code: Buffer; scale: number } {
  const length = norm(vector);
  let max = 0;
  for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]!));
  const scale = max / length / 127;
  const code = Buffer.alloc(vector.length);
  const values = new Int8Array(code.buffer, code.byteOffset, code.length);
  const factor = 1 / (length * scale);
  for (let i = 0; i < vector.length; i++) values[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! * factor)));
  return { code, scale };
}

// ---- the int8 scan of one scope ----

interface ScopeScan {
  /** `scope_versions.version` this copy reflects. */
  version: number;
  /** `PRAGMA data_version` at which the version was last checked. */
  verifiedAt: number;
  lastUsed: number;
  readonly size: number;
  bytes(): number;
  /** Inserts or replaces the code of a rowid. */
  set(rowid: number, kind: VectorKind, code: Uint8Array, scale: number): void;
  remove(rowid: number): void;
  /**
   * `rerank`: rowids that may be in the top `limit` by cosine: every vector whose int8 score plus
   * its error bound reaches the `limit`-th best score minus its error bound; at most `cap` of
   * them (the best int8 scores) when more qualify. `estimated`: the best `estimatedTop` by int8
   * score, best first, with that score as an estimate of the cosine (none when 0).
   */
  candidates(query: Float32Array, limit: number, kind: VectorKind | undefined, cap: number, estimatedTop: number): { rerank: number[]; estimated: Array<{ rowid: number; score: number }> };
}

function estimateScanBytes(size: number, dimension: number): number {
  return Math.ceil(size * 1.5) * (paddedDimension(dimension) + 4 + 8 + 4 + 1 + 48);
}

function paddedDimension(dimension: number): number {
  return Math.ceil(dimension / 16) * 16;
}

type DotsFunction = (query: number, codes: number, count: number, stride: number, out: number) => void;

function createScopeScan(kernel: WasmModule, dimension: number, expectedSize: number): ScopeScan {
  const stride = paddedDimension(dimension);
  const codesOffset = stride * 2; // after the int16 query; a multiple of 16
  const memory = new WebAssembly.Memory({ initial: 1 });
  const dots = new WebAssembly.Instance(kernel, { env: { memory } }).exports.dots as DotsFunction;
  let capacity = 0;
  let size = 0;
  let rowids = new Float64Array(0);
  let scales = new Float32Array(0);
  let kinds = new Uint8Array(0);
  const slotOf = new Map<number, number>();
  // Largest query component so that 127 · q · stride cannot overflow an int32 accumulator.
  const queryMax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));

  const scoresOffset = () => codesOffset + capacity * stride;

  function grow(minimum: number): void {
    const next = Math.max(minimum, Math.ceil(capacity * 1.5), 256);
    const needed = codesOffset + next * stride + next * 4;
    const pages = Math.ceil(needed / 65536) - memory.buffer.byteLength / 65536;
    if (pages > 0) memory.grow(pages);
    const grownRowids = new Float64Array(next);
    grownRowids.set(rowids.subarray(0, size));
    const grownScales = new Float32Array(next);
    grownScales.set(scales.subarray(0, size));
    const grownKinds = new Uint8Array(next);
    grownKinds.set(kinds.subarray(0, size));
    rowids = grownRowids;
    scales = grownScales;
    kinds = grownKinds;
    capacity = next;
  }

  grow(Math.max(expectedSize, 1));

  const scan: ScopeScan = {
    version: 0,
    verifiedAt: -1,
    lastUsed: 0,
    get size() {
      return size;
    },
    bytes: () => memory.buffer.byteLength + capacity * (8 + 4 + 1) + slotOf.size * 48,
    set(rowid, kind, code, scale) {
      let slot = slotOf.get(rowid);
      if (slot === undefined) {
        if (size === capacity) grow(size + 1);
        slot = size++;
        slotOf.set(rowid, slot);
        rowids[slot] = rowid;
      }
      const target = new Uint8Array(memory.buffer, codesOffset + slot * stride, stride);
      target.set(code);
      target.fill(0, code.length);
      scales[slot] = scale;
      kinds[slot] = KIND_CODES[kind];
    },
    remove(rowid) {
      const slot = slotOf.get(rowid);
      if (slot === undefined) return;
      const last = size - 1;
      if (slot !== last) {
        new Uint8Array(memory.buffer).copyWithin(codesOffset + slot * stride, codesOffset + last * stride, codesOffset + (last + 1) * stride);
        rowids[slot] = rowids[last]!;
        scales[slot] = scales[last]!;
        kinds[slot] = kinds[last]!;
        slotOf.set(rowids[slot]!, slot);
      }
      slotOf.delete(rowid);
      size = last;
    },
    candidates(query, limit, kind, cap, estimatedTop) {
      let max = 0;
      let squares = 0;
      for (let i = 0; i < query.length; i++) {
        max = Math.max(max, Math.abs(query[i]!));
        squares += query[i]! * query[i]!;
      }
      const queryNorm = Math.sqrt(squares);
      const factor = queryMax / max;
      const q16 = new Int16Array(memory.buffer, 0, stride);
      for (let i = 0; i < stride; i++) q16[i] = i < query.length ? Math.round(query[i]! * factor) : 0;
      const out = scoresOffset();
      dots(0, codesOffset, size, stride, out);
      const raw = new Int32Array(memory.buffer, out, size);
      const unit = 1 / factor;
      // Rounding errors of the codes (scale/2 per component) and of the query (unit/2), as
      // standard deviations of a sum of uniform errors, widened to ERROR_SIGMAS of them.
      const perScale = (ERROR_SIGMAS / Math.sqrt(12)) * queryNorm;
      const fromQuery = (ERROR_SIGMAS / Math.sqrt(12)) * unit;
      const wanted = kind === undefined ? -1 : KIND_CODES[kind];

      // Pass 1: the limit-th best lower bound.
      const heap = new Float64Array(limit);
      let filled = 0;
      for (let i = 0; i < size; i++) {
        if (wanted >= 0 && kinds[i] !== wanted) continue;
        const lower = raw[i]! * scales[i]! * unit - (perScale * scales[i]! + fromQuery);
        if (filled < limit) heapPush(heap, filled++, lower);
        else if (lower > heap[0]!) heapReplaceTop(heap, limit, lower);
      }
      const threshold = filled < limit ? -Infinity : heap[0]!;

      // Pass 2: everything whose upper bound reaches it.
      const slots: number[] = [];
      for (let i = 0; i < size; i++) {
        if (wanted >= 0 && kinds[i] !== wanted) continue;
        const upper = raw[i]! * scales[i]! * unit + (perScale * scales[i]! + fromQuery);
        if (upper >= threshold) slots.push(i);
      }
      const approx = (i: number) => raw[i]! * scales[i]!;
      if (slots.length > cap) {
        slots.sort((a, b) => approx(b) - approx(a));
        slots.length = cap;
      }
      const rerank = slots.map((slot) => rowids[slot]!);

      // Pass 3 (when asked): the best estimatedTop by int8 score. The codes are of unit vectors,
      // so score · unit / |query| estimates the cosine.
      const estimated: Array<{ rowid: number; score: number }> = [];
      if (estimatedTop > 0) {
        const best: number[] = [];
        const top = new Float64Array(estimatedTop);
        let count = 0;
        for (let i = 0; i < size; i++) {
          if (wanted >= 0 && kinds[i] !== wanted) continue;
          const value = approx(i);
          if (count < estimatedTop) heapPush(top, count++, value);
          else if (value > top[0]!) heapReplaceTop(top, estimatedTop, value);
        }
        const floor = count < estimatedTop ? -Infinity : top[0]!;
        for (let i = 0; i < size; i++) if ((wanted < 0 || kinds[i] === wanted) && approx(i) >= floor) best.push(i);
        best.sort((a, b) => approx(b) - approx(a) || rowids[a]! - rowids[b]!);
        for (const slot of best.slice(0, estimatedTop)) estimated.push({ rowid: rowids[slot]!, score: (approx(slot) * unit) / queryNorm });
      }
      return { rerank, estimated };
    },
  };
  return scan;
}

/** Min-heap of the `length` largest values seen (heap[0] is the smallest of them). */
function heapPush(heap: Float64Array, length: number, value: number): void {
  let i = length;
  heap[i] = value;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= heap[i]!) break;
    [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
    i = parent;
  }
}

function heapReplaceTop(heap: Float64Array, length: number, value: number): void {
  heap[0] = value;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    if (left < length && heap[left]! < heap[smallest]!) smallest = left;
    if (right < length && heap[right]! < heap[smallest]!) smallest = right;
    if (smallest === i) return;
    [heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!];
    i = smallest;
  }
}

// ---- the WebAssembly kernel ----

/** The part of the WebAssembly JS API used here (the project's TypeScript libs leave it out: it comes with the DOM lib). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmModule {
  readonly kind?: 'wasm-module';
}
declare const WebAssembly: {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { readonly exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
};

let kernelCache: WasmModule | null | undefined;

/**
 * A WebAssembly module (SIMD) exporting `dots(query, codes, count, stride, out)`: for each of
 * `count` int8 vectors of `stride` bytes at `codes`, the int32 dot product with the int16 query at
 * `query`, written to `out`. Null where WebAssembly SIMD is missing (every search is then exact).
 *
 * Assembled here byte by byte (the project has no WebAssembly toolchain); its text form:
 *
 *   (func (export "dots") (param $q i32) (param $base i32) (param $n i32) (param $stride i32) (param $out i32)
 *     (local $j i32) (local $acc v128)
 *     (block $done
 *       (br_if $done (i32.eqz (local.get $n)))
 *       (loop $vectors
 *         (local.set $acc (v128.const i32x4 0 0 0 0))
 *         (local.set $j (i32.const 0))
 *         (loop $blocks                                   ;; 16 components per turn
 *           (local.set $acc (i32x4.add (i32x4.add (local.get $acc)
 *               (i32x4.dot_i16x8_s (v128.load8x8_s (i32.add (local.get $base) (local.get $j)))
 *                                  (v128.load (i32.add (local.get $q) (i32.shl (local.get $j) (i32.const 1))))))
 *               (i32x4.dot_i16x8_s (v128.load8x8_s offset=8 (i32.add (local.get $base) (local.get $j)))
 *                                  (v128.load offset=16 (i32.add (local.get $q) (i32.shl (local.get $j) (i32.const 1)))))))
 *           (br_if $blocks (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 16))) (local.get $stride))))
 *         (i32.store (local.get $out) (sum of the 4 lanes of $acc))
 *         (local.set $out (i32.add (local.get $out) (i32.const 4)))
 *         (local.set $base (i32.add (local.get $base) (local.get $stride)))
 *         (br_if $vectors (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))))
 *
 * with the memory imported as `env.memory`.
 */
function int8DotKernel(): WasmModule | null {
  if (kernelCache !== undefined) return kernelCache;
  const bytes = assembleInt8DotKernel();
  kernelCache = typeof WebAssembly === 'object' && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
  return kernelCache;
}

function assembleInt8DotKernel(): Uint8Array {
  const leb = (value: number): number[] => {
    const out: number[] = [];
    do {
      let byte = value & 0x7f;
      value >>>= 7;
      if (value !== 0) byte |= 0x80;
      out.push(byte);
    } while (value !== 0);
    return out;
  };
  const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
  const name = (text: string) => [...leb(text.length), ...Buffer.from(text, 'utf8')];
  const simd = (op: number, ...immediates: number[]) => [0xfd, ...leb(op), ...immediates];
  const get = (local: number) => [0x20, local];
  const set = (local: number) => [0x21, local];
  const tee = (local: number) => [0x22, local];
  const i32 = { const: (v: number) => [0x41, v], add: 0x6a, sub: 0x6b, shl: 0x74, ltU: 0x49, eqz: 0x45, store: [0x36, 2, 0] };
  const v128 = { load: (offset: number) => simd(0x00, 0, offset), load8x8s: (offset: number) => simd(0x01, 0, offset), zero: simd(0x0c, ...new Array<number>(16).fill(0)) };
  const lane = (index: number) => simd(0x1b, index); // i32x4.extract_lane
  const dot = simd(0xba); // i32x4.dot_i16x8_s
  const add = simd(0xae); // i32x4.add
  const [Q, BASE, N, STRIDE, OUT, J, ACC] = [0, 1, 2, 3, 4, 5, 6];
  const BLOCK = 0x02;
  const LOOP = 0x03;
  const VOID = 0x40;
  const END = 0x0b;
  const BR_IF = 0x0d;
  const queryAt = [...get(Q), ...get(J), ...i32.const(1), i32.shl, i32.add];
  const codesAt = [...get(BASE), ...get(J), i32.add];
  const body = [
    BLOCK, VOID,
    ...get(N), i32.eqz, BR_IF, 0,
    LOOP, VOID,
    ...v128.zero, ...set(ACC),
    ...i32.const(0), ...set(J),
    LOOP, VOID,
    ...get(ACC),
    ...codesAt, ...v128.load8x8s(0), ...queryAt, ...v128.load(0), ...dot, ...add,
    ...codesAt, ...v128.load8x8s(8), ...queryAt, ...v128.load(16), ...dot, ...add,
    ...set(ACC),
    ...get(J), ...i32.const(16), i32.add, ...tee(J), ...get(STRIDE), i32.ltU, BR_IF, 0,
    END,
    ...get(OUT),
    ...get(ACC), ...lane(0), ...get(ACC), ...lane(1), i32.add, ...get(ACC), ...lane(2), i32.add, ...get(ACC), ...lane(3), i32.add,
    ...i32.store,
    ...get(OUT), ...i32.const(4), i32.add, ...set(OUT),
    ...get(BASE), ...get(STRIDE), i32.add, ...set(BASE),
    ...get(N), ...i32.const(1), i32.sub, ...tee(N), BR_IF, 0,
    END,
    END,
    END,
  ];
  const I32 = 0x7f;
  const V128 = 0x7b;
  const code = [2, 1, I32, 1, V128, ...body]; // locals: one i32 ($j), one v128 ($acc)
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]), // type: (i32 × 5) -> ()
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]), // import memory, min 1 page
    ...section(3, [1, 0]), // one function of type 0
    ...section(7, [1, ...name('dots'), 0x00, 0]), // export it
    ...section(10, [1, ...leb(code.length), ...code]),
  ]);
}
