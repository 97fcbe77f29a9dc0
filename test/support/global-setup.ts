/**
 * Starts one real PostgreSQL server for the whole test run (from the installed server
 * binaries); test files create their own databases on it. Without the binaries the PostgreSQL
 * suites report themselves as skipped with the reason.
 *
 * Every temporary file of the run (test stores, exports, child processes' files) goes under one
 * folder made here: the workers and the processes they start inherit it as TMPDIR, and the
 * teardown removes it, so a run leaves nothing behind in the machine's temporary folder.
 *
 * It also migrates one SQLite store, the template that `migratedDataDir` copies, and builds dist/
 * from src/ (`npm run build`, as `npm start` does first), which the child processes run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findPostgresBinaries, startLocalPostgres, type LocalPostgres } from '../../src/storage/local-postgres';
import { writeSqliteTemplate } from './sqlite-template';

// The build script is plain CommonJS, run before anything is compiled (scripts/build.cjs).
const { buildDist } = require('../../scripts/build.cjs') as { buildDist(): unknown };

export default async function globalSetup(): Promise<void> {
  buildDist();
  const { dir, reason } = findPostgresBinaries();
  if (!dir) process.env.NOCTURNE_TEST_PG_SKIP = reason;
  else {
    const server: LocalPostgres = await startLocalPostgres();
    (globalThis as { __nocturnePg?: LocalPostgres }).__nocturnePg = server;
    process.env.NOCTURNE_TEST_PG_URL = server.url;
  }
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-test-run-'));
  // The same permissions as /tmp: a cluster a test starts runs as the postgres user and must reach its folder.
  fs.chmodSync(runDir, 0o1777);
  (globalThis as { __nocturneRunDir?: string }).__nocturneRunDir = runDir;
  process.env.TMPDIR = runDir;
  await writeSqliteTemplate(path.join(runDir, 'sqlite-template', 'nocturne.db'));
}
