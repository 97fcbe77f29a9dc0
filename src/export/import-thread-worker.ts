/**
 * The thread of a streamed import (`import-thread.ts`): reads the export file once to check it
 * whole (`stream-validation.ts`: the same checks and messages as `parseScopeExport`), then again
 * to hand the rows back one batch at a time (`stream-rows.ts`), each only when the main thread
 * asks for the next. Neither pass holds more than one element of the document, and at most one
 * batch is in flight.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import { AppError } from '../shared/errors';
import { openImportFile, type ImportFileReader } from './import-file';
import type { FromThread, ThreadError, ToThread } from './import-thread';
import { JsonSyntaxError } from './json-byte-cursor';
import { createIdMapper } from './scope-copy';
import { planBatches } from './stream-rows';
import { scanScopeExport, type ScanOutcome } from './stream-validation';

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

/** A thread's error from anything thrown. */
function threadError(error: unknown): ThreadError {
  const e = error as AppError;
  return {
    message: e.message,
    code: e.code,
    category: e instanceof AppError ? e.category : 'internal',
    hint: e instanceof AppError ? e.hint : undefined,
    details: e instanceof AppError ? e.details : undefined,
  };
}

async function run(): Promise<void> {
  const start = await next();
  if (start.type !== 'start') return;
  let file: ImportFileReader | undefined;
  try {
    file = openImportFile(start.file);
    let outcome: ScanOutcome;
    try {
      outcome = scanScopeExport(file.from(0), start.limits);
    } catch (error) {
      if (!(error instanceof JsonSyntaxError)) throw error;
      send({
        type: 'failed',
        error: { message: `The body is not JSON: ${error.message}`, code: 'import.invalid_json', category: 'user', details: { syntax: error.message } },
      });
      return;
    }
    send({ type: 'peeked', scopeId: outcome.scopeId });
    if ((await next()).type !== 'go') return;
    if (!outcome.result.ok) throw outcome.result.error;
    const { plan } = outcome.result;
    const ids = start.mode === 'copy' ? createIdMapper(plan.oldIds) : undefined;
    send({ type: 'header', scope: ids ? ids.scope(plan.scope) : plan.scope, counts: plan.counts });
    // The next batch is read while the main thread writes the one it has.
    const batches = planBatches(file, plan, start.batchSize, ids);
    for (let batch = batches.next(); ; ) {
      if ((await next()).type !== 'next') return;
      if (batch.done) break;
      send({ type: 'rows', batch: batch.value });
      batch = batches.next();
    }
    send({ type: 'done' });
  } catch (error) {
    send({ type: 'failed', error: threadError(error) });
  } finally {
    file?.close();
  }
}

void run().finally(() => port.close());
