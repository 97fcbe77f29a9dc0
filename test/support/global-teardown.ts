import type { LocalPostgres } from '../../src/storage/local-postgres';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __nocturnePg?: LocalPostgres }).__nocturnePg?.stop();
}
