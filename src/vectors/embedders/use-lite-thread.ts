/**
 * USE-lite on a worker thread. The model's forward pass is ~13 ms of JavaScript and WebAssembly
 * per query; in the main thread nothing else runs meanwhile (better-sqlite3 is synchronous too),
 * so a search pays the embedding and its full-text query one after the other, and every request
 * waits while the embedding worker embeds a batch of 64 turns. On its own thread the embedding
 * overlaps the database work on the other core.
 *
 * The thread only runs the model (use-lite-thread-worker.ts); everything else about embedding
 * stays in local-embedder.ts. The thread holds the event loop open only while a request is
 * pending, so a process that forgets `close()` still exits, and a thread that dies rejects its
 * pending requests with the reason instead of leaving them waiting.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { UseLiteModel } from './local-embedder';

/** A batch of texts to embed, answered by the reply with the same id. */
export interface ThreadRequest {
  readonly id: number;
  readonly texts: string[];
}

export type ThreadReply =
  | { readonly type: 'loaded' }
  | { readonly type: 'load-failed'; readonly message: string }
  | { readonly type: 'embedded'; readonly id: number; readonly vectors: Float32Array[] }
  | { readonly type: 'failed'; readonly id: number; readonly message: string };

interface Pending {
  resolve(vectors: Float32Array[]): void;
  reject(error: Error): void;
}

export interface UseLiteThreadOptions {
  /** The script the thread runs (default: use-lite-thread-worker beside this file; tests pass failing ones). */
  readonly workerFile?: string;
}

/**
 * The thread's options for a script. A `.ts` script (run from sources under tsx or jest) gets
 * tsx's CommonJS hook so the thread can load it; compiled JavaScript needs nothing.
 */
function threadArgs(file: string): string[] {
  return path.extname(file) === '.ts' ? ['--require', require.resolve('tsx/cjs')] : [];
}

/**
 * Starts a thread and loads USE-lite in it. Resolves once the model is loaded; rejects with the
 * thread's reason when loading fails (the thread is gone then).
 */
export function loadUseLiteOnThread(options: UseLiteThreadOptions = {}): Promise<UseLiteModel> {
  const file = options.workerFile ?? path.join(__dirname, `use-lite-thread-worker${path.extname(__filename)}`);
  const execArgv = threadArgs(file);
  // The thread sends what the model library prints to stderr itself: a stream piped from the
  // thread's stdout here would keep the process alive after its work is done.
  const worker = new Worker(file, { execArgv });
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let stopped: Error | undefined;
  let onLoad: { resolve(): void; reject(error: Error): void } | undefined;

  const stop = (reason: Error) => {
    if (stopped) return;
    stopped = reason;
    onLoad?.reject(reason);
    for (const request of pending.values()) request.reject(reason);
    pending.clear();
  };
  worker.on('message', (reply: ThreadReply) => {
    if (reply.type === 'loaded') return onLoad?.resolve();
    if (reply.type === 'load-failed') {
      stop(new Error(reply.message));
      void worker.terminate();
      return;
    }
    const request = pending.get(reply.id);
    if (!request) return;
    pending.delete(reply.id);
    if (pending.size === 0) worker.unref();
    if (reply.type === 'embedded') request.resolve(reply.vectors);
    else request.reject(new Error(reply.message));
  });
  worker.on('error', (error) => stop(new Error(`the embedding thread failed: ${error.message}`, { cause: error })));
  worker.on('exit', (code) => stop(new Error(`the embedding thread exited (code ${code})`)));

  const model: UseLiteModel = {
    get usable() {
      return stopped === undefined;
    },
    embed(texts) {
      if (stopped) return Promise.reject(stopped);
      const id = nextId++;
      return new Promise<Float32Array[]>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ id, texts: [...texts] } satisfies ThreadRequest);
      });
    },
    async dispose() {
      stop(new Error('the embedding thread was closed'));
      await worker.terminate();
    },
  };
  return new Promise<UseLiteModel>((resolve, reject) => {
    onLoad = {
      resolve: () => {
        onLoad = undefined;
        worker.unref();
        resolve(model);
      },
      reject: (error) => {
        onLoad = undefined;
        reject(error);
      },
    };
  });
}
