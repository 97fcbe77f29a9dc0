/**
 * Starts one real PostgreSQL server for the whole test run (from the installed server
 * binaries); test files create their own databases on it. Without the binaries the PostgreSQL
 * suites report themselves as skipped with the reason.
 */
import { findPostgresBinaries, startLocalPostgres, type LocalPostgres } from '../../src/storage/local-postgres';

export default async function globalSetup(): Promise<void> {
  const { dir, reason } = findPostgresBinaries();
  if (!dir) {
    process.env.NOCTURNE_TEST_PG_SKIP = reason;
    return;
  }
  const server: LocalPostgres = await startLocalPostgres();
  (globalThis as { __nocturnePg?: LocalPostgres }).__nocturnePg = server;
  process.env.NOCTURNE_TEST_PG_URL = server.url;
}
