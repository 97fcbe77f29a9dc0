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
