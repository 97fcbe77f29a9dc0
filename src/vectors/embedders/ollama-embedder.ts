/**
 * The Ollama embedder: vectors from an embedding model served by Ollama (`POST /api/embed`).
 *
 * Ollama runs on the same machine or the same network, so its failures are mostly transient (a
 * restart, a model being loaded, a queue that is full): calls time out, and network errors,
 * 429 and 5xx are retried with exponential backoff. Anything else is a mistake that retrying
 * cannot fix (a model that was never pulled, a bad request) and fails at once with a hint
 * (which is which: ollama-embed-failures.ts).
 */
import { Ollama } from 'ollama';
import { AppError } from '../../shared/errors';
import { createSilentLogger, type Logger } from '../../shared/logger';
import { normalizeVector, type Embedder } from '../../memory/embeddings/embedder';
import { classifyEmbedFailure } from './ollama-embed-failures';

export interface OllamaEmbedderOptions {
  /** Base URL of the Ollama server, e.g. `http://127.0.0.1:11434`. */
  readonly host: string;
  readonly model?: string;
  /** Length of the model's vectors; checked on every response, because a silent change would corrupt the index. */
  readonly dimension?: number;
  /** Limit for one HTTP call, including reading the response. */
  readonly timeoutMs?: number;
  /** Extra attempts after a transient failure (so `maxRetries + 1` calls at most per batch). */
  readonly maxRetries?: number;
  /** Texts per HTTP call; keeps request bodies and Ollama's memory per call bounded. */
  readonly batchSize?: number;
  readonly logger?: Logger;
  /** The fetch to use (defaults to the global one); tests and proxies can pass their own. */
  readonly fetch?: typeof fetch;
}

const BACKOFF_BASE_MS = 200;
const BACKOFF_CAP_MS = 5_000;
const MAX_ERROR_BODY_CHARS = 300;

/** Exponential backoff with "equal jitter": half fixed, half random, so clients that failed together do not retry together. */
export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * Gives every call a deadline, and turns non-JSON error bodies (from a proxy, say) into
 * Ollama's `{ "error": ... }` shape, because the ollama client prints to stdout when it meets
 * one and stdout belongs to the CLI's results.
 */
function withDeadline(baseFetch: typeof fetch, timeoutMs: number): typeof fetch {
  return async (input, init) => {
    const response = await baseFetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    if (response.ok || response.headers.get('content-type')?.includes('application/json')) return response;
    const text = (await response.text()).trim().slice(0, MAX_ERROR_BODY_CHARS);
    return new Response(JSON.stringify({ error: text || `HTTP ${response.status} ${response.statusText}`.trim() }), {
      status: response.status,
      statusText: response.statusText,
      headers: { 'content-type': 'application/json' },
    });
  };
}

/**
 * Creates the Ollama embedder. Its name is `ollama:<model>`: vectors from different models
 * live in different spaces and must never share an index.
 */
export function createOllamaEmbedder(options: OllamaEmbedderOptions): Embedder {
  const { host, model = 'nomic-embed-text', dimension = 768, timeoutMs = 30_000, maxRetries = 3, batchSize = 64 } = options;
  for (const [setting, value, min] of [
    ['dimension', dimension, 1],
    ['timeoutMs', timeoutMs, 1],
    ['maxRetries', maxRetries, 0],
    ['batchSize', batchSize, 1],
  ] as const) {
    if (!Number.isInteger(value) || value < min) throw new RangeError(`${setting} must be an integer >= ${min}, got ${value}`);
  }
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'ollama-embedder', model });
  const client = new Ollama({ host, fetch: withDeadline(options.fetch ?? fetch, timeoutMs) });
  const name = `ollama:${model}`;
  let closed = false;

  function toVectors(response: unknown, batch: readonly string[]): Float32Array[] {
    const embeddings = (response as { embeddings?: unknown } | null)?.embeddings;
    if (!Array.isArray(embeddings) || embeddings.length !== batch.length) {
      throw new AppError(`Ollama returned ${Array.isArray(embeddings) ? embeddings.length : 'no'} embeddings for ${batch.length} texts`, {
        code: 'embedder.failed',
        category: 'third_party',
        details: { model },
        hint: 'Upgrade Ollama (the /api/embed endpoint needs version 0.3 or later).',
      });
    }
    return embeddings.map((values: unknown) => {
      const size = Array.isArray(values) ? values.length : 0;
      if (size !== dimension) {
        throw new AppError(`Ollama model "${model}" returned ${size}-dimensional vectors, but ${dimension} were expected`, {
          code: 'embedder.dimension_mismatch',
          category: 'user',
          details: { model, expected: dimension, actual: size },
          hint: `Use an embedding model with ${dimension} dimensions, or configure the embedder for ${size}; existing vectors must then be re-indexed.`,
        });
      }
      if (!(values as unknown[]).every((value) => typeof value === 'number' && Number.isFinite(value))) {
        throw new AppError(`Ollama model "${model}" returned a vector with non-numeric values`, {
          code: 'embedder.failed',
          category: 'third_party',
          details: { model },
        });
      }
      return normalizeVector(Float32Array.from(values as number[]));
    });
  }

  async function embedBatch(batch: readonly string[]): Promise<Float32Array[]> {
    for (let attempt = 0; ; attempt++) {
      let response: unknown;
      try {
        response = await client.embed({ model, input: [...batch] });
      } catch (error) {
        const failure = classifyEmbedFailure(error, { model, host, timeoutMs, batch: batch.length });
        if (!failure.retryable || attempt >= maxRetries) throw failure.error;
        const delayMs = backoffDelayMs(attempt);
        logger.warn('embedding request failed, retrying', {
          code: failure.error.code,
          attempt: attempt + 1,
          delayMs: Math.round(delayMs),
          error: failure.error,
        });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        continue;
      }
      return toVectors(response, batch);
    }
  }

  return {
    name,
    dimension,
    async embed(texts) {
      if (closed) throw new AppError('The Ollama embedder is closed', { code: 'embedder.closed', category: 'system' });
      const vectors: Float32Array[] = texts.map(() => new Float32Array(dimension));
      // Blank texts carry no meaning: like the other embedders, they keep the zero vector, and cost no call.
      const present = texts.flatMap((text, index) => (text.trim() === '' ? [] : [index]));
      for (let start = 0; start < present.length; start += batchSize) {
        const indices = present.slice(start, start + batchSize);
        const batchVectors = await embedBatch(indices.map((index) => texts[index]!));
        indices.forEach((index, row) => (vectors[index] = batchVectors[row]!));
      }
      return vectors;
    },
    async close() {
      closed = true;
    },
  };
}
