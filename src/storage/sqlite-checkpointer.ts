/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT of
 * the connection whose commit makes the WAL pass 1000 pages, synchronously: after one big
 * transaction (a 60 MiB scope import writes ~57 MiB of WAL) that COMMIT copied the whole WAL into
 * the database file and synced it, blocking the event loop (health checks included) for the
 * whole copy. Measured 2026-11-25 with better-sqlite3 on the real schema, 45,000 episodes of
 * 640 characters in one transaction: COMMIT 625-850 ms with the automatic checkpoint, 151-285 ms
 * without it, the checkpoint alone 415 ms (the rest of the COMMIT is SQLite re-checksumming the
 * transaction's WAL frames, which no setting avoids; see docs/reliability.md, item 5).
 *
 * So the service's connection turns the automatic checkpoint off and a worker thread with its
 * own connection runs a PASSIVE checkpoint every {@link CHECKPOINT_INTERVAL_MS}. Should the
 * thread die, the automatic checkpoint is turned back on: the WAL never grows without bound.
 * Explicit checkpoints on the service's connection (the forget's TRUNCATE in full-text.ts) work
 * as before.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** How often the thread checkpoints; a PASSIVE checkpoint with nothing to copy costs nothing. */
export const CHECKPOINT_INTERVAL_MS = 1_000;

/** SQLite's default `wal_autocheckpoint`, restored when the thread is gone. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

export interface SqliteCheckpointer {
  /** Stops the thread and closes its connection (idempotent). */
  stop(): Promise<void>;
}

function threadArgs(file: string): string[] {
  return path.extname(file) === '.ts' ? ['--require', require.resolve('tsx/cjs')] : [];
}

/**
 * Starts the checkpoint thread on `file`. `onLost` runs if the thread ends without being
 * stopped (it should turn the automatic checkpoint back on).
 */
export function startSqliteCheckpointer(target: { file: string; encryptionKey?: string }, onLost: (error?: Error) => void): SqliteCheckpointer {
  const script = path.join(__dirname, `sqlite-checkpoint-worker${path.extname(__filename)}`);
  // Set to 1 by the thread once its connection is open.
  const opened = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  const worker = new Worker(script, {
    execArgv: threadArgs(script),
    workerData: { file: target.file, encryptionKey: target.encryptionKey, intervalMs: CHECKPOINT_INTERVAL_MS, opened },
  });
  // The thread never keeps the process alive.
  worker.unref();
  let stopping = false;
  let lostError: Error | undefined;
  worker.on('error', (error) => {
    lostError = error;
  });
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      if (!stopping) onLost(lostError);
      resolve();
    });
  });
  return {
    async stop() {
      if (!stopping) {
        stopping = true;
        // A thread still starting has no connection to close and nothing to checkpoint: it is ended
        // at once, not waited for (a short CLI command would wait for the thread's whole start).
        if (Atomics.load(opened, 0) === 0) void worker.terminate();
        else worker.postMessage('stop');
        const timer = setTimeout(() => void worker.terminate(), 2_000);
        await exited;
        clearTimeout(timer);
      }
      await exited;
    },
  };
}
