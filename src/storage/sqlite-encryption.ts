/**
 * Encryption at rest for the embedded store (seed 000: "all memory stored locally in encrypted
 * SQLite").
 *
 * `better-sqlite3` is installed as `better-sqlite3-multiple-ciphers` (the same API, built with
 * SQLite3 Multiple Ciphers), so Prisma's adapter and the sqlite-vec index open encrypted files
 * with the driver they already use. Nocturne uses the SQLCipher 4 scheme (AES-256 pages with an
 * HMAC, the key derived from the passphrase with PBKDF2-SHA512): a file written here opens in the
 * `sqlcipher` shell with `PRAGMA key`. Every page is encrypted, the header included, so nothing
 * of the data — messages, memories, the full-text index, vectors — can be read without the key.
 *
 * The key comes from DATABASE_ENCRYPTION_KEY and is handed to SQLite right after the connection
 * opens, before anything reads the file. It never appears in an error, a log or a statement that
 * Prisma sees (Prisma logs its queries; the key goes straight to the driver).
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { StorageError } from '../shared/errors';

/** The connection methods used here (better-sqlite3's Database). */
export interface KeyableConnection {
  pragma(source: string, options?: { simple?: boolean }): unknown;
}

/** SQLite's plain-text file header; an encrypted file starts with random bytes instead. */
const PLAIN_HEADER = Buffer.from('SQLite format 3\u0000', 'latin1');

/** What is at `file`: nothing yet (or an empty file), a plain SQLite database, or something else (encrypted). */
export function sqliteFileState(file: string): 'absent' | 'plain' | 'encrypted' {
  let handle: number | undefined;
  try {
    handle = fs.openSync(file, 'r');
    const header = Buffer.alloc(PLAIN_HEADER.length);
    const read = fs.readSync(handle, header, 0, header.length, 0);
    if (read === 0) return 'absent';
    return header.equals(PLAIN_HEADER) ? 'plain' : 'encrypted';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw error;
  } finally {
    if (handle !== undefined) fs.closeSync(handle);
  }
}

/** A passphrase as an SQL string literal (quotes doubled); it goes to the driver, never to Prisma. */
function literal(key: string): string {
  return `'${key.replaceAll("'", "''")}'`;
}

/** Selects the SQLCipher 4 scheme on a connection (for `key` and `rekey` alike). */
export function useSqlCipher(connection: KeyableConnection): void {
  connection.pragma("cipher = 'sqlcipher'");
  connection.pragma('legacy = 4');
}

/**
 * Hands `key` (if any) to a connection that has not read its file yet, without reading it: the
 * caller's first statement is the first read. For connections whose file was already checked
 * with {@link unlockSqlite} (a read here would, for one, open the WAL before the migration
 * engine asks for exclusive locking).
 */
export function applyKey(connection: KeyableConnection, key: string | undefined): void {
  if (key === undefined) return;
  useSqlCipher(connection);
  connection.pragma(`key = ${literal(key)}`);
}

/**
 * Unlocks `connection` (just opened on `file`) with `key`, or checks that an unkeyed connection
 * is not facing an encrypted file. Throws a {@link StorageError} that says which of the three
 * mistakes it is — no key for an encrypted file, a key for a plain file, a wrong key — and what
 * to do; the key itself is never part of it.
 */
export function unlockSqlite(connection: KeyableConnection & { prepare(sql: string): { get(): unknown } }, file: string, key: string | undefined): void {
  applyKey(connection, key);
  try {
    // The first read of the file: with a wrong key (or none) SQLite answers SQLITE_NOTADB here.
    connection.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    throw encryptionMismatch(error, file, key !== undefined) ?? error;
  }
}

/** The StorageError for a file that does not open with the key given (or without one), if that is what `error` is. */
export function encryptionMismatch(error: unknown, file: string, keyed: boolean): StorageError | undefined {
  const code = (error as { code?: unknown }).code;
  if (code !== 'SQLITE_NOTADB') return undefined;
  const state = sqliteFileState(file);
  if (!keyed) {
    // Random bytes from the first page on: an encrypted file, or one that is no database at all.
    return new StorageError(`${file} cannot be read without a key: it is encrypted (or it is not an SQLite database).`, {
      code: 'storage.encrypted',
      cause: error,
      hint: "Set DATABASE_ENCRYPTION_KEY to the passphrase the store was encrypted with; if it never was, the file is damaged or not one of Nocturne's.",
    });
  }
  if (state === 'plain') {
    return new StorageError(`${file} is not encrypted, but DATABASE_ENCRYPTION_KEY is set.`, {
      code: 'storage.not_encrypted',
      cause: error,
      hint: 'Stop Nocturne and run `npm run cli -- encrypt` once to encrypt the existing store with that key, or unset DATABASE_ENCRYPTION_KEY.',
    });
  }
  return new StorageError(`${file} cannot be opened with DATABASE_ENCRYPTION_KEY: the key is wrong, or the file is not a Nocturne database.`, {
    code: 'storage.wrong_key',
    cause: error,
    hint: 'Set DATABASE_ENCRYPTION_KEY to the passphrase the store was encrypted with; without it the data cannot be read.',
  });
}

/** What {@link rekeySqliteFile} did to one file. */
export type RekeyOutcome = 'absent' | 'encrypted' | 'rekeyed' | 'decrypted' | 'unchanged';

/**
 * Encrypts a plain file with `to`, changes the key of an encrypted one (`from` -> `to`), or, with
 * `to` undefined, writes it back in plain text. Every page is rewritten in one transaction of
 * SQLite's rollback journal (rekeying cannot run in WAL mode, so the file leaves WAL for the
 * rewrite and goes back to it after), so a crash leaves the file as it was before or after.
 *
 * The file must not be open anywhere else: another connection keeps the WAL mode switch from
 * taking its lock, and this fails with `storage.in_use` before anything is changed.
 */
export function rekeySqliteFile(params: { file: string; from?: string; to?: string }): RekeyOutcome {
  const { file, from, to } = params;
  const state = sqliteFileState(file);
  if (state === 'absent') return 'absent';
  if (state === 'plain' && to === undefined) return 'unchanged';
  if (state === 'encrypted' && from !== undefined && to === from) {
    withConnection(file, (connection) => unlockSqlite(connection, file, from));
    return 'unchanged';
  }
  withConnection(file, (connection) => {
    unlockSqlite(connection, file, state === 'encrypted' ? from : undefined);
    try {
      connection.pragma('journal_mode = DELETE');
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
        throw new StorageError(`${file} is in use by another process; nothing was changed.`, {
          code: 'storage.in_use',
          cause: error,
          hint: 'Stop Nocturne (npm start) and any other command using the data folder, then run this again.',
        });
      }
      throw error;
    }
    if (to !== undefined) useSqlCipher(connection);
    connection.pragma(`rekey = ${literal(to ?? '')}`);
    connection.pragma('journal_mode = WAL');
  });
  if (to === undefined) return 'decrypted';
  return state === 'plain' ? 'encrypted' : 'rekeyed';
}

function withConnection(file: string, work: (connection: Database.Database) => void): void {
  // No busy wait: a file in use is reported at once, not after the usual 10 s.
  const connection = new Database(file, { fileMustExist: true, timeout: 0 });
  try {
    work(connection);
  } finally {
    connection.close();
  }
}
