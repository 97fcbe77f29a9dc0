import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { AppError } from '../../src/shared/errors';
import { createEmbedder, ollamaModelDimension } from '../../src/vectors/embedders/create-embedder';
import { dot } from '../../src/memory/embeddings/embedder';
import { hashEmbed } from '../../src/vectors/embedders/hash-embedder';
import { backoffDelayMs, createOllamaEmbedder, type OllamaEmbedderOptions } from '../../src/vectors/embedders/ollama-embedder';
import { describeEmbedderContract } from '../contracts/embedder-contract';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { memoryLogger } from '../support/logger';

describe('Ollama embedder against a loopback Ollama', () => {
  let ollama: OllamaDouble;

  beforeAll(async () => {
    ollama = await startOllamaDouble({ models: ['nomic-embed-text', 'mxbai-embed-large'] });
  });
  afterAll(async () => {
    await ollama?.stop();
  });
  beforeEach(() => ollama.reset());

  function embedder(options: Partial<OllamaEmbedderOptions> = {}) {
    return createOllamaEmbedder({ host: ollama.url, ...options });
  }

  async function failure(promise: Promise<unknown>): Promise<AppError> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }

  describeEmbedderContract({ name: 'ollama (loopback double)', create: () => embedder() });

  it('sends the configured model, and returns the server vectors normalized', async () => {
    const [vector] = await embedder({ model: 'nomic-embed-text:latest' }).embed(['Hello Ollama']);
    expect(ollama.requests).toEqual([expect.objectContaining({ path: '/api/embed', model: 'nomic-embed-text:latest', inputs: ['Hello Ollama'] })]);
    expect(dot(vector!, hashEmbed('Hello Ollama', 768))).toBeCloseTo(1, 5);
  });

  it('retries a 500 and succeeds, after a backoff', async () => {
    ollama.script({ kind: 'status', status: 500, error: 'llama runner process has terminated' });
    const { logger, lines } = memoryLogger();
    const started = performance.now();
    const vectors = await embedder({ logger }).embed(['retry me']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    expect(vectors[0]).toHaveLength(768);
    expect(ollama.requests.map((request) => request.fault ?? 'ok')).toEqual(['status', 'ok']);
    const retry = lines()
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.message === 'embedding request failed, retrying');
    expect(retry).toMatchObject({ level: 'warn', component: 'ollama-embedder', code: 'embedder.failed', attempt: 1 });
  });

  it('retries a 429', async () => {
    ollama.script({ kind: 'status', status: 429, error: 'server busy, please try again' }, 2);
    await expect(embedder().embed(['busy'])).resolves.toHaveLength(1);
    expect(ollama.requests).toHaveLength(3);
  });

  it('gives up after maxRetries with the last failure, category third_party', async () => {
    ollama.script({ kind: 'status', status: 503, error: 'unavailable' }, 5);
    const error = await failure(embedder({ maxRetries: 2 }).embed(['never']));
    expect(error).toMatchObject({ code: 'embedder.failed', category: 'third_party', details: { status: 503, model: 'nomic-embed-text' } });
    expect(error.message).toContain('503');
    expect(ollama.requests).toHaveLength(3);
  });

  it('does not retry a 404 for a model that was never pulled, and says how to fix it', async () => {
    const error = await failure(embedder({ model: 'not-pulled-model' }).embed(['hi']));
    expect(error.code).toBe('embedder.model_not_found');
    expect(error.hint).toContain('ollama pull not-pulled-model');
    expect(error.message).toContain('not-pulled-model');
    expect(ollama.requests).toHaveLength(1);
  });

  it('does not retry other 4xx', async () => {
    ollama.script({ kind: 'status', status: 400, error: 'this model does not support embeddings' }, 3);
    const error = await failure(embedder().embed(['hi']));
    expect(error).toMatchObject({ code: 'embedder.failed', details: { status: 400 } });
    expect(error.message).toContain('this model does not support embeddings');
    expect(ollama.requests).toHaveLength(1);
  });

  it('reads a plain-text error body (from a proxy) without printing to stdout', async () => {
    ollama.script({ kind: 'status', status: 502, error: '<html>Bad Gateway</html>', body: 'text' }, 5);
    const log = jest.spyOn(console, 'log');
    try {
      const error = await failure(embedder({ maxRetries: 0 }).embed(['hi']));
      expect(error.message).toContain('Bad Gateway');
      expect(log).not.toHaveBeenCalled();
    } finally {
      log.mockRestore();
    }
  });

  it('times out a hanging call as embedder.timeout, within a bounded time', async () => {
    ollama.script({ kind: 'hang', ms: 10_000 }, 5);
    const started = performance.now();
    const error = await failure(embedder({ timeoutMs: 300, maxRetries: 1 }).embed(['slow']));
    const elapsed = performance.now() - started;
    expect(error).toMatchObject({ code: 'embedder.timeout', category: 'third_party' });
    expect(error.message).toContain('300 ms');
    expect(elapsed).toBeGreaterThanOrEqual(600);
    expect(elapsed).toBeLessThan(2_000);
    expect(ollama.requests).toHaveLength(2);
  });

  it('recovers when only the first call hangs', async () => {
    ollama.script({ kind: 'hang', ms: 10_000 });
    await expect(embedder({ timeoutMs: 300 }).embed(['slow then fine'])).resolves.toHaveLength(1);
    expect(ollama.requests).toHaveLength(2);
  });

  it('rejects vectors of the wrong size, naming the model and both sizes', async () => {
    ollama.script({ kind: 'wrong_dimension', dimension: 1024 }, 3);
    const error = await failure(embedder().embed(['hi']));
    expect(error.code).toBe('embedder.dimension_mismatch');
    expect(error.message).toMatch(/nomic-embed-text.*1024.*768/);
    expect(error.details).toMatchObject({ expected: 768, actual: 1024 });
    expect(ollama.requests).toHaveLength(1);
  });

  it('splits 150 texts into batches of batchSize, keeping order', async () => {
    const texts = Array.from({ length: 150 }, (_, i) => `memory number ${i}`);
    const vectors = await embedder({ batchSize: 64 }).embed(texts);
    expect(ollama.requests.map((request) => request.inputs.length)).toEqual([64, 64, 22]);
    expect(ollama.requests.flatMap((request) => request.inputs)).toEqual(texts);
    expect(vectors).toHaveLength(150);
    vectors.forEach((vector, i) => expect(dot(vector, hashEmbed(texts[i]!, 768))).toBeCloseTo(1, 5));
  });

  it('fails the whole call, with no partial result, when a later batch fails', async () => {
    ollama.script({ kind: 'pass' });
    ollama.script({ kind: 'wrong_dimension', dimension: 3 });
    const texts = Array.from({ length: 10 }, (_, i) => `text ${i}`);
    await expect(embedder({ batchSize: 4 }).embed(texts)).rejects.toMatchObject({ code: 'embedder.dimension_mismatch' });
    expect(ollama.requests.map((request) => request.fault ?? 'ok')).toEqual(['ok', 'wrong_dimension']);
  });

  it('refuses to embed after close', async () => {
    const closing = embedder();
    await closing.close();
    await expect(closing.embed(['hi'])).rejects.toMatchObject({ code: 'embedder.closed' });
    expect(ollama.requests).toHaveLength(0);
  });

  it('is what the config chooses for EMBEDDER=ollama, with the model size known up front', async () => {
    const { logger } = memoryLogger();
    const chosen = createEmbedder({ kind: 'ollama', model: 'mxbai-embed-large', ollamaHost: ollama.url }, { logger, timeoutMs: 5_000 });
    expect(chosen).toMatchObject({ name: 'ollama:mxbai-embed-large', dimension: 1024 });
    await expect(chosen.embed(['hi'])).rejects.toMatchObject({ code: 'embedder.dimension_mismatch', details: { expected: 1024, actual: 768 } });
    expect(ollamaModelDimension('nomic-embed-text:latest')).toBe(768);
    expect(ollamaModelDimension('all-minilm')).toBe(384);
    expect(ollamaModelDimension('some-new-model')).toBe(768);
  });
});

describe('Ollama embedder without a server', () => {
  it('reports an unreachable host as embedder.unreachable after retrying', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    let calls = 0;
    const countingFetch: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const embedder = createOllamaEmbedder({ host: `http://127.0.0.1:${port}`, maxRetries: 1, fetch: countingFetch });
    const error = await embedder.embed(['hi']).then(
      () => undefined,
      (caught: unknown) => caught as AppError,
    );
    expect(error).toMatchObject({ code: 'embedder.unreachable', category: 'third_party' });
    expect(error?.message).toContain(`127.0.0.1:${port}`);
    expect(error?.message).toContain('ECONNREFUSED');
    expect(calls).toBe(2);
  });

  it('backs off exponentially with jitter, capped', () => {
    expect(backoffDelayMs(0, () => 0)).toBe(100);
    expect(backoffDelayMs(0, () => 1)).toBe(200);
    expect(backoffDelayMs(3, () => 1)).toBe(1_600);
    expect(backoffDelayMs(20, () => 1)).toBe(5_000);
    expect(backoffDelayMs(20, () => 0)).toBe(2_500);
  });

  it('validates its options', () => {
    expect(() => createOllamaEmbedder({ host: 'http://127.0.0.1:1', batchSize: 0 })).toThrow(RangeError);
    expect(() => createOllamaEmbedder({ host: 'http://127.0.0.1:1', maxRetries: -1 })).toThrow(RangeError);
  });
});
