/**
 * Embeds a batch so that one text the embedder refuses cannot stop the others. An embedder fails
 * whole batches (the port never returns partial ones), so a single text it always refuses (too
 * long for the model, say) used to fail its batch on every retry, and since the queue is ordered,
 * no row after it, of any scope, was embedded again.
 *
 * When the batch fails, a probe text is embedded first: if that fails too, the embedder itself is
 * down and the batch's error is thrown as before (the worker backs off; nothing is blamed on a
 * row). If the probe passes, the batch is split in halves, and halves again, until every text that
 * still fails is alone: those are reported with their error, every other text gets its vector.
 * A batch of n texts with one bad text costs about 2 log2(n) + 2 calls, and only when it fails.
 */
import type { Embedder } from './embedder';

/** What {@link embedIsolating} found: a vector per text, or the error of the texts that failed alone. */
export interface IsolatedBatch {
  /** In the order given; undefined where the text failed. */
  readonly vectors: ReadonlyArray<Float32Array | undefined>;
  /** Index of each text that failed on its own while the embedder worked, with its error. */
  readonly failures: ReadonlyMap<number, unknown>;
}

/** A text any embedder can embed: it answering shows the embedder works. */
export const PROBE_TEXT = 'probe';

/**
 * Embeds `texts`. Throws the batch's error when the embedder fails even the probe (it is down, or
 * misconfigured); otherwise returns every vector it could get and the texts that failed alone.
 */
export async function embedIsolating(embedder: Embedder, texts: readonly string[]): Promise<IsolatedBatch> {
  const vectors: Array<Float32Array | undefined> = new Array(texts.length).fill(undefined);
  const failures = new Map<number, unknown>();
  try {
    return { vectors: await embedder.embed(texts), failures };
  } catch (error) {
    await embedder.embed([PROBE_TEXT]).catch(() => {
      throw error;
    });
    if (texts.length === 1) {
      failures.set(0, error);
      return { vectors, failures };
    }
  }
  // Depth first: the first half is settled before the second is tried.
  const all = texts.map((_, i) => i);
  const half = Math.ceil(all.length / 2);
  const pending: number[][] = [all.slice(half), all.slice(0, half)];
  while (pending.length > 0) {
    const part = pending.pop()!;
    try {
      const got = await embedder.embed(part.map((i) => texts[i]!));
      part.forEach((i, k) => (vectors[i] = got[k]));
    } catch (error) {
      if (part.length === 1) {
        failures.set(part[0]!, error);
        continue;
      }
      const middle = Math.ceil(part.length / 2);
      pending.push(part.slice(middle), part.slice(0, middle));
    }
  }
  return { vectors, failures };
}
