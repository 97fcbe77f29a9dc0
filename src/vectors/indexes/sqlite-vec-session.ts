/**
 * The vector file as this process sees it: the open connection and its statements, the identity,
 * epoch and table dimension last read from `meta`, and the in-memory int8 copies of large scopes.
 *
 * Why one place: several processes may share `vectors.db`. Every operation first calls `sync`,
 * which notices another process's commits through `PRAGMA data_version` and rereads `meta`; a
 * new epoch or dimension (a clear, a reindex) drops the int8 copies and the vec0 statements, so
 * nothing this process holds can outlive the table it was read from.
 */
import type Database from 'better-sqlite3';
import { waitWhileBusy } from '../../storage/sqlite-lock-waits';
import { createScanCache, type ScanCache } from './int8-scan-cache';
import { createVecTable, openVectorFile, prepareVecStatements, toVectorError, type FixedStatements, type VecStatements } from './sqlite-vec-file';
import { checkNotClosed, identityMissingError, requireOpen } from './vector-checks';
import type { IndexIdentity, VectorKind } from '../../memory/vectors/vector-index';

/** What the session needs to open the file and wait for other processes. */
export interface VecSessionOptions {
  readonly file: string;
  /** Dimension of the vector table when the file is new. */
  readonly dimension: number;
  readonly encryptionKey?: string;
  /** RAM the int8 copies of all scopes may use together. */
  readonly scanMemoryBytes: number;
  /** How long an operation waits in total for another process's lock. */
  readonly busyTimeoutMs: number;
}

/** The shared state of one sqlite-vec index and the steps every operation on it takes. */
export interface VecSession {
  readonly scans: ScanCache;
  /** The recorded identity, as of the last `sync` (null before `setIdentity`). */
  identity(): IndexIdentity | null;
  /** The identity, or the error a write before `setIdentity` gets. */
  requireIdentity(): IndexIdentity;
  /** The dimension of the vec0 table, as of the last `sync`. */
  tableDimension(): number;
  /** The connection; refuses use before `init()` and after `close()`. */
  open(): Database.Database;
  /** The statements on `meta`, `items` and `scope_versions`. */
  fixed(): FixedStatements;
  /** The statements on the current vec0 table (prepared again after the table changes). */
  vec(): VecStatements;
  /** Rereads what another process may have changed since this connection last looked. */
  sync(): void;
  /** Reads `meta` again: identity, epoch and dimension. */
  readMeta(): void;
  /** Empties everything in the caller's transaction, with a vec0 table of `dimension`, in a new epoch. */
  dropAll(connection: Database.Database, dimension: number): void;
  /** Marks a write to the scope (other processes then reload their copy of it); its new version. */
  bumpVersion(scopeId: string): number;
  /** Opens the file on the first call, then rereads everything; the recorded identity. */
  attach(): IndexIdentity | null;
  /** Closes the file for good; later calls are refused with `vectors.closed`. */
  detach(): void;
  /**
   * Runs `work` now, and again on a timer while it meets another process's lock (up to the busy
   * timeout in all): the connection's busy timeout is 0, so a lock never stops the event loop. Safe
   * to run again: each `work` reads, or writes in one transaction that a lock rolls back whole, and
   * touches the in-memory copies only after its commit. Failures become our vector errors.
   */
  call<T>(what: string, work: () => T): Promise<T>;
}

/** A session on `options.file`; nothing is opened until {@link VecSession.attach}. */
export function createVecSession(options: VecSessionOptions): VecSession {
  let db: Database.Database | null = null;
  let closed = false;
  let stmts: FixedStatements | null = null;
  let vecStmts: VecStatements | null = null;
  let identity: IndexIdentity | null = null;
  let tableDimension = options.dimension;
  let epoch = 0;
  let dataVersion = -1;

  const open = (): Database.Database => requireOpen(closed, db);
  const fixed = (): FixedStatements => {
    open();
    return stmts!;
  };
  const readVersion = (scopeId: string): number => (fixed().readVersion.get(scopeId) as number | undefined) ?? 0;

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
    options.scanMemoryBytes,
  );

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

  function sync(): void {
    const current = fixed().dataVersion.get() as number;
    if (current === dataVersion) return;
    dataVersion = current;
    readMeta();
  }

  return {
    scans,
    identity: () => identity,
    requireIdentity() {
      if (!identity) throw identityMissingError();
      return identity;
    },
    tableDimension: () => tableDimension,
    open,
    fixed,
    vec() {
      const connection = open();
      if (!vecStmts) vecStmts = prepareVecStatements(connection);
      return vecStmts;
    },
    sync,
    readMeta,
    dropAll(connection, dimension) {
      vecStmts = null;
      connection.exec('DROP TABLE IF EXISTS vec_items');
      connection.exec('DELETE FROM items');
      createVecTable(connection, dimension);
      const s = fixed();
      s.metaSet.run('dimension', String(dimension));
      s.metaSet.run('epoch', String(epoch + 1));
    },
    bumpVersion: (scopeId) => fixed().bumpVersion.get(scopeId) as number,
    attach() {
      checkNotClosed(closed);
      if (!db) {
        const opened = openVectorFile({ file: options.file, dimension: options.dimension, encryptionKey: options.encryptionKey });
        db = opened.connection;
        stmts = opened.statements;
      }
      dataVersion = -1;
      sync();
      return identity;
    },
    detach() {
      closed = true;
      scans.clear();
      vecStmts = null;
      stmts = null;
      db?.close();
      db = null;
    },
    call: (what, work) => waitWhileBusy(work, options.busyTimeoutMs).catch((error: unknown) => Promise.reject(toVectorError(error, what, options.file))),
  };
}
