/**
 * The checkpointer's thread (see sqlite-checkpointer.ts): its own connection on the database
 * file runs a PASSIVE checkpoint every `intervalMs`, copying committed WAL frames into the file
 * off the service's event loop. PASSIVE never waits for a lock and never blocks the writer or
 * readers; what it cannot copy now is copied at the next tick.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { applyKey } from './sqlite-encryption';

interface CheckpointerData {
  readonly file: string;
  readonly encryptionKey?: string;
  readonly intervalMs: number;
  /** Set to 1 once the connection is open: until then, a stop ends the thread without waiting for it. */
  readonly opened: Int32Array;
}

const { file, encryptionKey, intervalMs, opened } = workerData as CheckpointerData;
const connection = new Database(file, { fileMustExist: true, timeout: 0 });
applyKey(connection, encryptionKey);
Atomics.store(opened, 0, 1);

const timer = setInterval(() => {
  try {
    connection.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    // Busy (another checkpoint runs, e.g. a forget's TRUNCATE): the next tick retries. Anything
    // else ends the thread, and the service's connection checkpoints by itself again.
    const code = (error as { code?: string }).code ?? '';
    if (!code.startsWith('SQLITE_BUSY') && !code.startsWith('SQLITE_LOCKED')) throw error;
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  connection.close();
  parentPort?.close();
});
