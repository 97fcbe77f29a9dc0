/**
 * A big import off the event loop and out of memory (issue 16, item 5). Parsing and validating
 * an export is seconds of synchronous work for tens of megabytes, during which the process
 * answered nothing (87 MB made /healthz take 34 s), and a parsed document takes 15-20 times its
 * size in memory. Here a worker thread (`import-thread-worker.ts`) reads the export from a file
 * one element at a time, checks it whole, then hands the rows back one batch at a time; the main
 * thread writes each batch in the import's transaction and yields to the event loop between
 * batches (see json-import.ts).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { EpisodeLimits } from '../memory/episodes/episode-limits';
import { AppError } from '../shared/errors';
import type { ImportFile } from './import-file';
import type { RowBatch } from './insert-scope';
import type { ScopeCounts, ScopeExport } from './scope-document';

export type ToThread =
  | { type: 'start'; file: ImportFile; mode: 'exact' | 'copy'; batchSize: number; limits: EpisodeLimits }
  | { type: 'go' }
  | { type: 'next' }
  | { type: 'stop' };

export interface ThreadError {
  readonly message: string;
  readonly code: string;
  readonly category: string;
  readonly hint?: string;
  readonly details?: Record<string, unknown>;
}

export type FromThread =
  | { type: 'peeked'; scopeId: string | undefined }
  | { type: 'header'; scope: ScopeExport['scope']; counts: ScopeCounts }
  | { type: 'rows'; batch: RowBatch }
  | { type: 'done' }
  | { type: 'failed'; error: ThreadError };

/** The conversation with one import thread. */
export interface ImportThread {
  /** The next message of the thread (rejects when the thread failed or died). */
  receive(): Promise<FromThread>;
  send(message: ToThread): void;
  /** Ends the thread (idempotent). */
  close(): Promise<void>;
}

function threadArgs(file: string): string[] {
  return path.extname(file) === '.ts' ? ['--require', require.resolve('tsx/cjs')] : [];
}

/** Turns a thread's error back into the error the import would have thrown in this thread. */
function rebuild(error: ThreadError): Error {
  if (error.category === 'user' || error.category === 'system' || error.category === 'third_party') {
    return new AppError(error.message, { code: error.code, category: error.category, hint: error.hint, details: error.details });
  }
  return new Error(error.message);
}

/** Starts a thread for the export in `file`, its episodes checked against `limits`. */
export function startImportThread(file: ImportFile, mode: 'exact' | 'copy', batchSize: number, limits: EpisodeLimits): ImportThread {
  const script = path.join(__dirname, `import-thread-worker${path.extname(__filename)}`);
  const worker = new Worker(script, { execArgv: threadArgs(script) });
  const inbox: FromThread[] = [];
  let waiting: { resolve(message: FromThread): void; reject(error: Error): void } | undefined;
  let ended: Error | undefined;
  const deliver = (message: FromThread) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w.resolve(message);
    } else inbox.push(message);
  };
  const end = (error: Error) => {
    ended ??= error;
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w.reject(ended);
    }
  };
  worker.on('message', deliver);
  worker.on('error', (error) => end(error));
  worker.on('exit', (code) => end(new Error(`the import thread ended (exit code ${code})`)));
  worker.postMessage({ type: 'start', file, mode, batchSize, limits: { maxEpisodeBytes: limits.maxEpisodeBytes } } satisfies ToThread);
  return {
    receive() {
      const message = inbox.shift();
      if (message) {
        if (message.type === 'failed') return Promise.reject(rebuild(message.error));
        return Promise.resolve(message);
      }
      if (ended) return Promise.reject(ended);
      return new Promise<FromThread>((resolve, reject) => {
        waiting = { resolve: (m) => (m.type === 'failed' ? reject(rebuild(m.error)) : resolve(m)), reject };
      });
    },
    send: (message) => worker.postMessage(message),
    close: async () => {
      await worker.terminate();
    },
  };
}
