/**
 * The embedded VectorIndex: sqlite-vec in a SQLite file of its own (`DATA_DIR/vectors.db`).
 *
 * Why a separate file: the sqlite-vec extension has to be loaded into the connection, which the
 * Prisma adapter of the main database cannot do; and the vectors are derived data (they can always
 * be rebuilt from episodes and memories), so a lost or mismatched file costs a reindex, never data.
 *
 * The parts: the file, its tables and statements (`sqlite-vec-file.ts`); what this process knows of
 * it and the steps every operation takes (`sqlite-vec-session.ts`); the identity and reindex
 * (`sqlite-vec-identity.ts`); the writes (`sqlite-vec-writes.ts`) and the reads
 * (`sqlite-vec-reads.ts`). This file puts them together behind the VectorIndex port.
 *
 * Search has two paths, chosen by the scope's size (`exactScanBelow`, 5,000 by default): an exact
 * vec0 scan for small scopes, and an int8 scan with exact re-ranking for large ones
 * (`sqlite-vec-search.ts`, `int8-scope-scan.ts`).
 *
 * Memory: the int8 copies of all scopes together stay under `scanMemoryBytes` (256 MiB by default,
 * `VECTOR_SCAN_MEMORY_MB`: a bound on the process's memory whatever the number of scopes);
 * see `int8-scan-cache.ts`.
 *
 * Concurrency: WAL and lock waits on timers (see `VecSession.call`) let several processes share the file. A process notices
 * another's commits through `PRAGMA data_version` and then rechecks the identity, the epoch and the
 * version of the scope it searches, reloading its in-memory copy when it changed.
 */
import { pollUntil, SQLITE_BUSY_TIMEOUT_MS } from '../../storage/sqlite-lock-waits';
import { clearVecIndex, MAX_DIMENSION, setVecIdentity } from './sqlite-vec-identity';
import { countVectors, getVectors, searchVectors, searchVectorsExactly, type VectorSearchStats } from './sqlite-vec-reads';
import { createVecSession } from './sqlite-vec-session';
import { deleteScopeVectors, deleteVectors, upsertVectors } from './sqlite-vec-writes';
import { checkDimension } from './vector-checks';
import type { VectorHit, VectorIndex, VectorSearch } from '../../memory/vectors/vector-index';

export type { VectorSearchStats } from './sqlite-vec-reads';

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

/** The sqlite-vec adapter, plus an always-exact search for benchmarks and agreement checks. */
export interface SqliteVecVectorIndex extends VectorIndex {
  /** Same as `search`, but always a full scan of the scope's float vectors. */
  searchExact(query: VectorSearch): Promise<VectorHit[]>;
}

const DEFAULT_EXACT_SCAN_BELOW = 5_000;
const DEFAULT_SCAN_MEMORY_BYTES = 256 * 1024 * 1024;
/** How far apart a checkpoint held back by another process's reader is tried again. */
const CHECKPOINT_RETRY_MS = 100;

/** Creates the adapter; nothing is opened until {@link VectorIndex.init}. */
export function createSqliteVecVectorIndex(options: SqliteVecVectorIndexOptions): SqliteVecVectorIndex {
  checkDimension(options.dimension, MAX_DIMENSION);
  const exactScanBelow = options.exactScanBelow ?? DEFAULT_EXACT_SCAN_BELOW;
  const busyTimeoutMs = options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS;
  const session = createVecSession({
    file: options.file,
    dimension: options.dimension,
    encryptionKey: options.encryptionKey,
    scanMemoryBytes: options.scanMemoryBytes ?? DEFAULT_SCAN_MEMORY_BYTES,
    busyTimeoutMs,
  });
  const { call } = session;

  return {
    init: () => call('open the vector index', () => session.attach()),
    setIdentity: (next) => call('record the index identity', () => setVecIdentity(session, next)),
    upsert: (records) => call('store vectors', () => upsertVectors(session, records)),
    delete: (scopeId, ids) => call('delete vectors', () => deleteVectors(session, scopeId, ids)),
    deleteScope: (scopeId) => call('delete a scope’s vectors', () => deleteScopeVectors(session, scopeId)),
    clear: () => call('clear the vector index', () => clearVecIndex(session)),
    search: (query) => call('search vectors', () => searchVectors(session, query, exactScanBelow, options.onSearch)),
    searchExact: (query) => call('search vectors', () => searchVectorsExactly(session, query)),
    count: (scopeId, kind) => call('count vectors', () => countVectors(session, scopeId, kind)),
    get: (scopeId, ids) => call('read vectors', () => getVectors(session, scopeId, ids)),
    checkpoint: () =>
      // TRUNCATE waits for other processes' readers to leave the log: tried again on a timer.
      pollUntil(
        () =>
          call('checkpoint the vector index', () => {
            const [row] = session.open().pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
            return row?.busy === 0;
          }),
        busyTimeoutMs,
        CHECKPOINT_RETRY_MS,
      ),
    close: () => call('close the vector index', () => session.detach()),
  };
}
