/**
 * The embedded VectorIndex: sqlite-vec in a SQLite file of its own (`DATA_DIR/vectors.db`).
 *
 * Why a separate file: the sqlite-vec extension has to be loaded into the connection, which the
 * Prisma adapter of the main database cannot do; and the vectors are derived data (they can always
 * be rebuilt from episodes and memories), so a lost or mismatched file costs a reindex, never data.
 *
 * The file, its tables and statements: `sqlite-vec-file.ts`.
 *
 * Search has two paths, chosen by the scope's size (`exactScanBelow`, 5,000 by default): an exact
 * vec0 scan for small scopes, and an int8 scan with exact re-ranking for large ones
 * (`sqlite-vec-search.ts`, `int8-scope-scan.ts`).
 *
 * Memory: the int8 copies of all scopes together stay under `scanMemoryBytes` (256 MiB by default,
 * `VECTOR_SCAN_MEMORY_MB`: a bound on the process's memory whatever the number of scopes);
 * see `int8-scan-cache.ts`.
 *
 * Concurrency: WAL and lock waits on timers (see `storageCall`) let several processes share the file. A process notices
 * another's commits through `PRAGMA data_version` and then rechecks the identity, the epoch and the
 * version of the scope it searches, reloading its in-memory copy when it changed.
 */
import type Database from 'better-sqlite3';
import { AppError } from '../../shared/errors';
import { pollUntil, SQLITE_BUSY_TIMEOUT_MS, waitWhileBusy } from '../../storage/sqlite-lock-waits';
import { float32View, floatBlob, norm } from './float-vectors';
import { createScanCache } from './int8-scan-cache';
import { quantize } from './int8-scope-scan';
import { createVecTable, openVectorFile, prepareVecStatements, toVectorError, type FixedStatements, type VecStatements } from './sqlite-vec-file';
import { exactSearch, quantizedSearch } from './sqlite-vec-search';
import {
  checkDimension,
  checkId,
  checkIdentityName,
  checkKind,
  checkLimit,
  checkRecords,
  checkScope,
  checkVector,
  identityMissingError,
} from './vector-checks';
import type { IndexIdentity, VectorHit, VectorIndex, VectorKind, VectorRecord, VectorSearch } from '../../memory/vectors/vector-index';

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
  /** How long an operation waits in total for another process's lock (default 10 s, on timers). */
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

const DEFAULT_EXACT_SCAN_BELOW = 5_000;
const DEFAULT_SCAN_MEMORY_BYTES = 256 * 1024 * 1024;
/** sqlite-vec refuses KNN queries with k above 4096; larger limits are clamped to it. */
const MAX_LIMIT = 4096;
const MAX_DIMENSION = 8192;
/** Ids per `IN (...)` query of delete and get, well under SQLite's limit of bound parameters. */
const ID_BATCH = 500;
/** How far apart a checkpoint held back by another process's reader is tried again. */
const CHECKPOINT_RETRY_MS = 100;

/** The writes of one upsert to one scope, applied to its in-memory int8 copy after the commit. */
interface ScopeChange {
  version: number;
  set: { rowid: number; kind: VectorKind; code: Buffer; scale: number }[];
}

/** Creates the adapter; nothing is opened until {@link VectorIndex.init}. */
export function createSqliteVecVectorIndex(options: SqliteVecVectorIndexOptions): SqliteVecVectorIndex {
  checkDimension(options.dimension, MAX_DIMENSION);
  const exactScanBelow = options.exactScanBelow ?? DEFAULT_EXACT_SCAN_BELOW;
  const scanMemoryBytes = options.scanMemoryBytes ?? DEFAULT_SCAN_MEMORY_BYTES;
  const file = options.file;
  const busyTimeoutMs = options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS;

  let db: Database.Database | null = null;
  let closed = false;
  let stmts: FixedStatements | null = null;
  let vecStmts: VecStatements | null = null;
  let identity: IndexIdentity | null = null;
  let tableDimension = options.dimension;
  let epoch = 0;
  let dataVersion = -1;
  const scans = createScanCache(
    {
      dataVersion: () => dataVersion,
      readVersion,
      // The version is read in the same read transaction as the rows, so they agree.
      readScope: (scopeId, each) =>
        open().transaction(() => {
          const rows = fixed().loadScope.iterate(scopeId) as Iterable<[number, VectorKind, Buffer, number]>;
          for (const [rowid, kind, code, scale] of rows) each(rowid, kind, code, scale);
          return readVersion(scopeId);
        })(),
    },
    scanMemoryBytes,
  );

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
    const rows = fixed().metaAll.all() as { key: string; value: string }[];
    const meta = new Map(rows.map((row) => [row.key, row.value]));
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

  function readVersion(scopeId: string): number {
    return (fixed().readVersion.get(scopeId) as number | undefined) ?? 0;
  }

  function bumpVersion(scopeId: string): number {
    return fixed().bumpVersion.get(scopeId) as number;
  }

  function requireIdentity(): IndexIdentity {
    if (!identity) throw identityMissingError();
    return identity;
  }

  function checkSearch(query: VectorSearch): { limit: number; vector: Float32Array } | null {
    checkScope(query.scopeId);
    if (query.kind !== undefined) checkKind(query.kind);
    checkLimit(query.limit);
    const vector = checkVector(query.vector, tableDimension, identity?.embedder, 'The query vector');
    if (query.limit === 0 || norm(vector) === 0) return null;
    return { limit: Math.min(query.limit, MAX_LIMIT), vector };
  }

  /**
   * Runs `work` now, and again on a timer while it meets another process's lock (up to
   * `busyTimeoutMs` in all): the connection's busy timeout is 0, so a lock never stops the event
   * loop. Safe to run again: each `work` reads, or writes in one transaction that a lock rolls
   * back whole, and touches the in-memory copies only after its commit.
   */
  function storageCall<T>(what: string, work: () => T): Promise<T> {
    return waitWhileBusy(work, busyTimeoutMs).catch((error: unknown) => Promise.reject(toVectorError(error, what, file)));
  }

  return {
    init: () =>
      storageCall('open the vector index', () => {
        if (closed) throw new AppError('The vector index is closed.', { code: 'vectors.closed', category: 'system' });
        if (!db) {
          const opened = openVectorFile({
            file,
            dimension: options.dimension,
            encryptionKey: options.encryptionKey,
          });
          db = opened.connection;
          stmts = opened.statements;
        }
        dataVersion = -1;
        sync();
        return identity;
      }),

    setIdentity: (next) =>
      storageCall('record the index identity', () => {
        checkIdentityName(next?.embedder);
        checkDimension(next.dimension, MAX_DIMENSION);
        const connection = open();
        connection
          .transaction(() => {
            sync();
            if (identity && identity.embedder === next.embedder && identity.dimension === next.dimension) return;
            const empty = (fixed().anyItem.get() as number | undefined) === undefined;
            if (!(identity === null && empty && tableDimension === next.dimension)) dropAll(connection, next.dimension);
            fixed().metaSet.run('embedder', next.embedder);
            fixed().metaSet.run('dimension', String(next.dimension));
          })
          .immediate();
        readMeta();
      }),

    upsert: (records) =>
      storageCall('store vectors', () => {
        const connection = open();
        sync();
        const current = requireIdentity();
        const latest = checkRecords(records, tableDimension, identity?.embedder);
        if (latest.size === 0) return;
        const changes = new Map<string, ScopeChange>();
        connection
          .transaction(() => {
            sync();
            if (identity?.embedder !== current.embedder || identity.dimension !== current.dimension) {
              requireSameIdentity(current, identity);
            }
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
          })
          .immediate();
        for (const [scopeId, change] of changes) {
          scans.afterWrite(scopeId, change.version, (scan) => {
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
        const version = connection
          .transaction(() => {
            const v = vec();
            for (let start = 0; start < ids.length; start += ID_BATCH) {
              const batch = [...new Set(ids.slice(start, start + ID_BATCH))];
              const rows = connection
                .prepare(`SELECT rowid FROM items WHERE scope_id = ? AND id IN (${placeholders(batch)})`)
                .pluck()
                .all(scopeId, ...batch) as number[];
              for (const rowid of rows) {
                v.delete.run(BigInt(rowid));
                fixed().deleteItem.run(rowid, scopeId);
                removed.push(rowid);
              }
            }
            return removed.length > 0 ? bumpVersion(scopeId) : null;
          })
          .immediate();
        if (version !== null) {
          scans.afterWrite(scopeId, version, (scan) => removed.forEach((rowid) => scan.remove(rowid)));
        }
      }),

    deleteScope: (scopeId) =>
      storageCall('delete a scope’s vectors', () => {
        checkScope(scopeId);
        const connection = open();
        sync();
        connection
          .transaction(() => {
            const v = vec();
            const rowids = fixed().scopeRowids.all(scopeId) as number[];
            for (const rowid of rowids) v.delete.run(BigInt(rowid));
            fixed().deleteScopeItems.run(scopeId);
            if (rowids.length > 0) bumpVersion(scopeId);
          })
          .immediate();
        scans.drop(scopeId);
      }),

    clear: () =>
      storageCall('clear the vector index', () => {
        const connection = open();
        connection
          .transaction(() => {
            sync();
            dropAll(connection, tableDimension);
            fixed().metaDelete.run('embedder');
          })
          .immediate();
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
          let scan = scans.cached(query.scopeId);
          const size = scan ? scan.size : (fixed().countScope.get(query.scopeId) as number);
          if (size === 0) return { hits: [], stats: null };
          if (size < exactScanBelow) {
            scans.drop(query.scopeId);
            scan = null;
          } else if (!scan) {
            scan = scans.load(query.scopeId, size, tableDimension);
          }
          if (!scan) {
            const exact = exactSearch(vec(), query, checked.limit);
            return { hits: exact, stats: { path: 'exact', scanned: size, reranked: 0 } as const };
          }
          const result = quantizedSearch({
            vec: vec(),
            fixed: fixed(),
            scan,
            query: { ...query, vector: checked.vector },
            limit: checked.limit,
          });
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
        return exactSearch(vec(), query, checked.limit);
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
              .prepare(`SELECT rowid, id, kind FROM items WHERE scope_id = ? AND id IN (${placeholders(batch)})`)
              .all(scopeId, ...batch) as { rowid: number; id: string; kind: VectorKind }[];
            for (const row of rows) {
              const blob = v.vector.get(row.rowid) as Buffer | undefined;
              // A copy: the view over the blob would alias memory better-sqlite3 reuses.
              if (!blob) continue;
              records.push({ id: row.id, kind: row.kind, scopeId, vector: Float32Array.from(float32View(blob)) });
            }
          }
        })();
        return records;
      }),

    checkpoint: () =>
      // TRUNCATE waits for other processes' readers to leave the log: tried again on a timer.
      pollUntil(
        () =>
          storageCall('checkpoint the vector index', () => {
            const [row] = open().pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
            return row?.busy === 0;
          }),
        busyTimeoutMs,
        CHECKPOINT_RETRY_MS,
      ),

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

/** Another process gave the index a new identity between this call's checks and its write. */
function requireSameIdentity(expected: IndexIdentity, actual: IndexIdentity | null): never {
  const found = actual ? `${actual.embedder}/${actual.dimension}` : 'none';
  throw new AppError(`The vector index identity changed while storing (expected ${expected.embedder}/${expected.dimension}, ` + `found ${found}).`, {
    code: 'vectors.identity_changed',
    category: 'system',
    hint: 'Another process started a reindex; retry after it finishes.',
  });
}

/** `?, ?, …` for an `IN (...)` list of these values. */
function placeholders(values: readonly unknown[]): string {
  return values.map(() => '?').join(',');
}
