/**
 * The embedding worker's background loop: one batch after another while there is work, a pause
 * when there is none (cut short by `wake()` when new rows arrive), and after a failed batch a wait
 * doubled per consecutive failure up to {@link MAX_RETRY_WAIT_MS}. Kept apart from the worker so
 * that what a batch does and when the next one runs are read separately.
 */
import type { Logger } from '../../shared/logger';

/** The longest wait after failed batches: an embedder down for hours is still tried every 5 minutes. */
const MAX_RETRY_WAIT_MS = 300_000;

/** A loop running `runOnce` in the background. */
export interface EmbeddingLoop {
  /** Runs in the background until stop(). */
  start(): void;
  /** Tells a sleeping loop that new rows arrived. */
  wake(): void;
  /** Finishes the batch in flight and stops. */
  stop(): Promise<void>;
}

/** The loop of one worker; nothing runs until `start()`. */
export function createEmbeddingLoop(deps: {
  /** One batch; returns how many rows it dealt with (0: nothing to do). */
  runOnce: () => Promise<number>;
  /** Pause between polls when there is nothing to do. */
  idleMs: number;
  /** Pause after a failed batch, doubled per consecutive failure. */
  retryMs: number;
  log: Logger;
}): EmbeddingLoop {
  const { runOnce, idleMs, retryMs, log } = deps;
  let running = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async function backgroundLoop(): Promise<void> {
    let failures = 0;
    while (running) {
      try {
        const done = await runOnce();
        failures = 0;
        if (done === 0) await sleep(idleMs);
      } catch (error) {
        failures += 1;
        const wait = Math.min(retryMs * 2 ** (failures - 1), MAX_RETRY_WAIT_MS);
        log.warn('embedding batch failed; will retry', { error, retryInMs: wait, failures });
        await sleep(wait);
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loop = backgroundLoop();
    },
    wake() {
      wakeUp?.();
    },
    async stop() {
      running = false;
      wakeUp?.();
      await loop;
      loop = undefined;
    },
  };
}
