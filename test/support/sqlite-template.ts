/**
 * The run's template store: one SQLite file migrated by the global setup, which
 * `migratedDataDir` (databases.ts) copies for the tests that are not about migrating.
 */
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite from 'better-sqlite3';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase } from '../../src/storage/database';
import { SQLITE_TEMPLATE_ENV } from './databases';

/**
 * Migrates a new SQLite store at `file` and checkpoints it into that one file: the run's template.
 * Migrating costs a process up to ~1.3 s of CPU (the schema engine's WebAssembly, then 13 migrations);
 * copying the result costs ~0.04 s, so the run migrates once and the tests that are not about
 * migrating start on copies.
 */
export async function writeSqliteTemplate(file: string): Promise<void> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = await openDatabase({ database: { provider: 'sqlite', url: `file:${file}`, file }, logger: createSilentLogger() });
  await db.close();
  const raw = new BetterSqlite(file, { fileMustExist: true });
  try {
    raw.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    raw.close();
  }
  process.env[SQLITE_TEMPLATE_ENV] = file;
}
