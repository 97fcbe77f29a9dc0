/**
 * The SQLite file of the sqlite-vec index (`DATA_DIR/vectors.db`): opening it with the extension,
 * its pragmas and schema, the prepared statements, and the translation of SQLite failures into our
 * errors with advice a user can act on.
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
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { AppError, StorageError } from '../../shared/errors';
import { unlockSqlite } from '../../storage/sqlite-encryption';
import { errorMessage } from './vector-checks';

/** The file format this version reads and writes; another one is refused with advice to rebuild. */
const FORMAT = '1';
/**
 * Vectors per vec0 chunk. Small chunks keep a new scope's partition small (32 × 2 KiB at 512
 * dimensions) and make re-ranking lookups cheap (~20 µs, against ~340 µs with the default 1,024,
 * because sqlite-vec reads a vector through an incremental blob of the whole chunk).
 */
const CHUNK_SIZE = 32;

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

/** How to open the file. */
export interface VectorFileOptions {
  readonly file: string;
  /** Dimension of the vector table when the file is new. */
  readonly dimension: number;
  /** DATABASE_ENCRYPTION_KEY: the file is encrypted like the database. */
  readonly encryptionKey?: string;
}

/**
 * Opens (creating if needed) the file with sqlite-vec loaded, the key applied and the schema in
 * place; a failure closes the connection and says what to check.
 */
export function openVectorFile(options: VectorFileOptions): {
  connection: Database.Database;
  statements: FixedStatements;
} {
  const { file } = options;
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  let connection: Database.Database;
  try {
    connection = new Database(file);
    sqliteVec.load(connection);
  } catch (error) {
    throw new StorageError(`Cannot open the vector index ${file}: ${errorMessage(error)}`, {
      code: 'vectors.unavailable',
      cause: error,
      hint:
        `Check that ${file} (DATA_DIR/vectors.db) is a readable and writable SQLite file and that the sqlite-vec ` +
        'package is installed for this platform; the file can be deleted and rebuilt with a reindex.',
    });
  }
  try {
    // The key first: nothing can read an encrypted file before it.
    try {
      unlockSqlite(connection, file, options.encryptionKey);
    } catch (error) {
      // Still an index that cannot be used (the service goes on by keywords), with the reason.
      const advice = (error as { hint?: string }).hint ?? '';
      throw new StorageError(`Cannot open the vector index: ${errorMessage(error)}`, {
        code: 'vectors.unavailable',
        cause: error,
        hint: `${advice} A damaged ${file} (DATA_DIR/vectors.db) can be deleted and rebuilt with a reindex.`.trim(),
      });
    }
    // Busy timeout 0: a lock of another process is waited for on timers by the caller (see
    // VecSession.call in sqlite-vec-session.ts), never by sleeping in SQLite on the event loop.
    connection.pragma('busy_timeout = 0');
    connection.pragma('journal_mode = WAL');
    connection.pragma('synchronous = NORMAL');
    // A forgotten vector and its row are zeroed in the file, not left in free pages.
    connection.pragma('secure_delete = ON');
    // 64 MiB of page cache (default 2 MiB): writes spread over many scopes touch the last
    // chunk of each, and re-ranking reads vectors all over the file.
    connection.pragma('cache_size = -65536');
    const statements = connection
      .transaction(() => {
        connection.exec(SCHEMA);
        const stmts = prepareFixedStatements(connection);
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
        return stmts;
      })
      .immediate();
    return { connection, statements };
  } catch (error) {
    connection.close();
    throw error;
  }
}

/** Creates the vec0 table of `dimension` (if missing) and the index that makes its partitions fast. */
export function createVecTable(connection: Database.Database, dimension: number): void {
  connection.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS vec_items USING vec0(` +
      `scope_id text partition key, kind text, embedding float[${dimension}] distance_metric=cosine, ` +
      `chunk_size=${CHUNK_SIZE})`,
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

/** Statements on the ordinary tables: prepared once per connection, they survive a new vec0 table. */
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
    /**
     * The items of a search's hits in one statement (a JSON list of rowids), not one lookup per hit;
     * the list drives the lookups (CROSS JOIN), else SQLite walks the whole scope's index.
     */
    itemsByRowids: db.prepare(
      'SELECT i.rowid AS rowid, i.id AS id, i.kind AS kind FROM json_each(?) j CROSS JOIN items i ON i.rowid = j.value WHERE i.scope_id = ?',
    ),
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
      .prepare('INSERT INTO scope_versions (scope_id, version) VALUES (?, 1) ' + 'ON CONFLICT (scope_id) DO UPDATE SET version = version + 1 RETURNING version')
      .pluck(),
  };
}

/** The statements on `meta`, `items` and `scope_versions`. */
export type FixedStatements = ReturnType<typeof prepareFixedStatements>;

/** Statements on the vec0 table; prepared again whenever the table is recreated. */
export function prepareVecStatements(db: Database.Database) {
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

/** The statements on `vec_items`. */
export type VecStatements = ReturnType<typeof prepareVecStatements>;

/** Ids per `IN (...)` query of delete and get, well under SQLite's limit of bound parameters. */
export const ID_BATCH = 500;

/** `?, ?, …` for an `IN (...)` list of these values. */
export function placeholders(values: readonly unknown[]): string {
  return values.map(() => '?').join(',');
}

/** SQLite codes that mean the file itself cannot serve as the index (not a lock, not a disk error). */
const UNUSABLE_FILE_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_CANTOPEN', 'SQLITE_READONLY']);

/**
 * Our error for a failed operation on the file: a lock held too long, a file that is not (or no
 * longer) a usable database, or anything else, each with what to check.
 */
export function toVectorError(error: unknown, what: string, file: string): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new StorageError(`Could not ${what}: the vector index is locked by another process.`, {
      code: 'vectors.busy',
      cause: error,
      hint: `Another Nocturne process holds ${file} (DATA_DIR/vectors.db) for too long; retry, or stop the other process.`,
    });
  }
  if (typeof code === 'string' && UNUSABLE_FILE_CODES.has(code)) {
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
