/**
 * The thread of a streamed admin import (`import-thread.ts`): parses the request body, validates
 * it with the same `parseScopeExport` as every import, and hands the rows back one batch at a
 * time, each only when the main thread asks for the next (so at most one batch is in flight and
 * the main thread's event loop never runs a parse or a validation of the whole document).
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import { AppError } from '../shared/errors';
import { parseScopeExport } from './import-validation';
import { scopeBatches } from './insert-scope';
import { withNewIds } from './scope-copy';
import { countScopeExport } from './scope-document';
import type { FromThread, ToThread } from './import-thread';

const port = parentPort as MessagePort;
const send = (message: FromThread) => port.postMessage(message);

let waiting: ((message: ToThread) => void) | undefined;
const queued: ToThread[] = [];
const next = (): Promise<ToThread> =>
  new Promise((resolve) => {
    const message = queued.shift();
    if (message) resolve(message);
    else waiting = resolve;
  });

port.on('message', (message: ToThread) => {
  if (waiting) {
    const resolve = waiting;
    waiting = undefined;
    resolve(message);
  } else queued.push(message);
});

async function run(): Promise<void> {
  const start = await next();
  if (start.type !== 'start') return;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(start.body.buffer, start.body.byteOffset, start.body.byteLength).toString('utf8'));
  } catch (error) {
    send({ type: 'failed', error: { message: `The body is not JSON: ${(error as Error).message}`, code: 'import.invalid_json', category: 'user' } });
    return;
  }
  const scope = (value as { scope?: { id?: unknown } } | null)?.scope;
  send({ type: 'peeked', scopeId: typeof scope?.id === 'string' ? scope.id : undefined });
  if ((await next()).type !== 'go') return;
  try {
    const parsed = parseScopeExport(value);
    value = undefined;
    const doc = start.mode === 'copy' ? withNewIds(parsed) : parsed;
    send({ type: 'header', scope: doc.scope, counts: countScopeExport(doc) });
    for (const batch of scopeBatches(doc, start.batchSize)) {
      if ((await next()).type !== 'next') return;
      send({ type: 'rows', batch });
    }
    if ((await next()).type !== 'next') return;
    send({ type: 'done' });
  } catch (error) {
    const e = error as AppError;
    send({
      type: 'failed',
      error: { message: e.message, code: e.code, category: e instanceof AppError ? e.category : 'internal', hint: e instanceof AppError ? e.hint : undefined, details: e instanceof AppError ? e.details : undefined },
    });
  }
}

void run().finally(() => port.close());
