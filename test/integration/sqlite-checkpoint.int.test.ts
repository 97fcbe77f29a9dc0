/**
 * Reliability item 5: a big transaction's COMMIT does not copy the WAL into the database file on
 * the service's event loop (that checkpoint blocked health checks for ~400 ms after a 60 MiB
 * import); a thread of its own does it within seconds, on plain and encrypted files alike, and
 * stops when the client disconnects.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { createSqliteClient } from '../../src/storage/sqlite-driver';
import { tempDir } from '../support/databases';

const ROWS = 3_000;
const ROW_BYTES = 2_000;

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe.each([
  ['a plain file', undefined],
  ['an encrypted file', 'checkpoint test passphrase'],
])('WAL checkpoints of %s', (_label, encryptionKey) => {
  it('are not run by the COMMIT, but by the checkpoint thread soon after it', async () => {
    const file = path.join(tempDir(), 'data', 'nocturne.db');
    const prisma = await createSqliteClient({ file, encryptionKey });
    try {
      await prisma.$executeRawUnsafe('CREATE TABLE "t" ("x" TEXT NOT NULL)');
      // ~6 MiB in one transaction, well past SQLite's 1000-page automatic checkpoint.
      await prisma.$transaction(async (tx) => {
        for (let i = 0; i < ROWS; i += 100) {
          await tx.$executeRawUnsafe(
            `WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 100) INSERT INTO "t" ("x") SELECT printf('%.${ROW_BYTES}c', 'a') || (${i} + v) FROM s`,
          );
        }
      });
      const wal = fs.statSync(`${file}-wal`).size;
      const mainAfterCommit = fs.statSync(file).size;
      expect(wal).toBeGreaterThan(ROWS * ROW_BYTES);
      // The COMMIT left the rows in the WAL: the database file did not receive them on this thread.
      expect(mainAfterCommit).toBeLessThan(ROWS * ROW_BYTES);
      // The thread copies them within a few of its 1 s ticks.
      expect(await waitFor(() => fs.statSync(file).size > ROWS * ROW_BYTES, 10_000)).toBe(true);
    } finally {
      await prisma.$disconnect();
    }
    // Every row is there for another connection, and once the client (and its thread) are gone a
    // TRUNCATE checkpoint finds nothing in the way.
    const other = new Database(file, { timeout: 2_000 });
    try {
      if (encryptionKey) {
        other.pragma("cipher = 'sqlcipher'");
        other.pragma('legacy = 4');
        other.pragma(`key = '${encryptionKey}'`);
      }
      expect(other.prepare('SELECT COUNT(*) AS n FROM "t"').get()).toEqual({ n: ROWS });
      expect(other.pragma('wal_checkpoint(TRUNCATE)')).toEqual([expect.objectContaining({ busy: 0 })]);
    } finally {
      other.close();
    }
  });
});
