/**
 * Real databases for tests: a fresh SQLite file in a temporary folder, or a fresh database on
 * the PostgreSQL server the global setup started.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../../src/config/load-config';

export const postgresAvailable = (): boolean => Boolean(process.env.NOCTURNE_TEST_PG_URL);

/** Why the PostgreSQL suites are skipped, printed once by each of them. */
export const postgresSkipReason = (): string => process.env.NOCTURNE_TEST_PG_SKIP ?? 'the test PostgreSQL server did not start';

export function tempDir(prefix = 'nocturne-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A SQLite database config on a new file. */
export function sqliteDatabase(dir = tempDir()): Extract<Config['database'], { provider: 'sqlite' }> {
  const file = path.join(dir, 'nocturne.db');
  return { provider: 'sqlite', url: `file:${file}`, file };
}

/** Where the global setup put the run's migrated SQLite store (test/support/sqlite-template.ts). */
export const SQLITE_TEMPLATE_ENV = 'NOCTURNE_TEST_SQLITE_TEMPLATE';

/**
 * A new data folder (DATA_DIR) whose SQLite store already has every migration: a copy of the run's
 * template, as a store looks on every start after the first. Without a template (a run that skipped
 * the global setup) the folder is empty and the first start migrates.
 */
export function migratedDataDir(dir = path.join(tempDir(), 'data')): string {
  fs.mkdirSync(dir, { recursive: true });
  const template = process.env[SQLITE_TEMPLATE_ENV];
  if (template && fs.existsSync(template)) fs.copyFileSync(template, path.join(dir, 'nocturne.db'));
  return dir;
}

let counter = 0;

/** A new, empty PostgreSQL database on the test server; returns its URL. */
export async function createPostgresDatabase(): Promise<string> {
  const serverUrl = process.env.NOCTURNE_TEST_PG_URL;
  if (!serverUrl) throw new Error(postgresSkipReason());
  const name = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function postgresDatabase(): Promise<Extract<Config['database'], { provider: 'postgres' }>> {
  return { provider: 'postgres', url: await createPostgresDatabase() };
}
