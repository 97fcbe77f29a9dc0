import fs from 'node:fs';
import type { LocalPostgres } from '../../src/storage/local-postgres';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __nocturnePg?: LocalPostgres }).__nocturnePg?.stop();
  // The run's temporary folder (global-setup.ts): test stores and files, gone with the run.
  const runDir = (globalThis as { __nocturneRunDir?: string }).__nocturneRunDir;
  if (runDir) fs.rmSync(runDir, { recursive: true, force: true });
}
