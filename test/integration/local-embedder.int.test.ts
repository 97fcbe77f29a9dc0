import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createEmbedder } from '../../src/vectors/embedders/create-embedder';
import { dot, type Embedder } from '../../src/memory/embeddings/embedder';
import { createLocalEmbedder, type UseLiteModel } from '../../src/vectors/embedders/local-embedder';
import { loadUseLiteOnThread } from '../../src/vectors/embedders/use-lite-thread';
import { tempDir } from '../support/databases';
import { describeEmbedderContract } from '../contracts/embedder-contract';
import { memoryLogger } from '../support/logger';
import { cleanEnv, ROOT } from '../support/run-process';

describeEmbedderContract({ name: 'local USE-lite', create: () => createLocalEmbedder({ batchSize: 4 }) });

describe('local embedder (USE-lite)', () => {
  const { logger, lines } = memoryLogger();
  let embedder: Embedder;

  beforeAll(() => {
    embedder = createEmbedder({ kind: 'local', model: 'ignored-for-local', ollamaHost: 'http://127.0.0.1:1' }, { logger });
  });
  afterAll(async () => {
    await embedder.close();
  });

  it('is what the config chooses for EMBEDDER=local, named after the model', () => {
    expect(embedder.name).toBe('local:use-lite-512');
    expect(embedder.dimension).toBe(512);
  });

  it('loads the model once for concurrent first calls, on a worker thread, and logs the load', async () => {
    const [a, b] = await Promise.all([embedder.embed(['first caller']), embedder.embed(['second caller'])]);
    expect(a[0]).toHaveLength(512);
    expect(b[0]).toHaveLength(512);
    const loads = lines().filter((line) => line.includes('embedding model loaded'));
    expect(loads).toHaveLength(1);
    expect(JSON.parse(loads[0]!)).toMatchObject({ component: 'local-embedder', model: 'local:use-lite-512', runOn: 'thread' });
  });

  it('gives the same vectors on the worker thread as in the calling thread', async () => {
    const inProcess = createLocalEmbedder({ runOn: 'main' });
    try {
      const texts = ['What did Caroline research?', 'Melanie painted a sunset over the lake', ''];
      const [threaded, direct] = await Promise.all([embedder.embed(texts), inProcess.embed(texts)]);
      expect(dot(threaded[0]!, direct[0]!)).toBeGreaterThan(0.99999);
      expect(dot(threaded[1]!, direct[1]!)).toBeGreaterThan(0.99999);
      expect(threaded[2]!.every((v) => v === 0)).toBe(true);
    } finally {
      await inProcess.close();
    }
  });

  it('loads the model again after its thread died, instead of failing every call after it', async () => {
    let loads = 0;
    const dead: UseLiteModel = {
      usable: false,
      embed: async () => Promise.reject(new Error('the embedding thread exited (code 1)')),
      dispose: async () => undefined,
    };
    const healthy: UseLiteModel = { usable: true, embed: async (texts) => texts.map(() => new Float32Array(512).fill(1)), dispose: async () => undefined };
    const recovering = createLocalEmbedder({ loadModel: async () => (loads++ === 0 ? dead : healthy) });
    await expect(recovering.embed(['first'])).rejects.toMatchObject({
      code: 'embedder.failed',
      message: expect.stringContaining('the embedding thread exited (code 1)'),
    });
    const [vector] = await recovering.embed(['second']);
    expect(loads).toBe(2);
    expect(vector![0]).toBeCloseTo(1 / Math.sqrt(512));
    await recovering.close();
  });

  it('understands meaning beyond shared words', async () => {
    const [dog, puppy, stocks] = await embedder.embed(['I love my dog', 'My puppy makes me happy', 'Interest rates rose again']);
    expect(dot(dog!, puppy!)).toBeGreaterThan(dot(dog!, stocks!) + 0.2);
  });

  it('truncates texts to maxChars, so only the first characters count', async () => {
    const short = createLocalEmbedder({ maxChars: 20 });
    try {
      const head = 'Tea with my grandma.';
      const [plain, padded, other] = await short.embed([head, `${head} Then a long story about quantum chromodynamics.`, 'Quantum chromodynamics']);
      expect(dot(plain!, padded!)).toBeGreaterThan(0.9999);
      expect(dot(plain!, other!)).toBeLessThan(0.9);
    } finally {
      await short.close();
    }
  });

  it('splits work into batches without changing results', async () => {
    const texts = Array.from({ length: 7 }, (_, i) => `turn number ${i} about topic ${i % 3}`);
    const tiny = createLocalEmbedder({ batchSize: 2 });
    try {
      const [batched, whole] = await Promise.all([tiny.embed(texts), embedder.embed(texts)]);
      expect(batched).toHaveLength(7);
      batched.forEach((vector, i) => expect(dot(vector, whole[i]!)).toBeGreaterThan(0.99999));
    } finally {
      await tiny.close();
    }
  });

  it('refuses to embed after close', async () => {
    const closing = createLocalEmbedder();
    await closing.embed(['warm up']);
    await closing.close();
    await expect(closing.embed(['too late'])).rejects.toMatchObject({ code: 'embedder.closed' });
  });

  it('leaves stdout to the program, and lets it exit without close(): a process that loads the model prints only its own output', async () => {
    const source = path.join(ROOT, 'src', 'vectors', 'embedders', 'local-embedder.ts');
    const script = [
      `const { createLocalEmbedder } = require(${JSON.stringify(source)});`,
      'createLocalEmbedder().embed(["hello there"]).then((vectors) => process.stdout.write(JSON.stringify({ length: vectors[0].length }) + "\\n"));',
    ].join('\n');
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      execFile(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['-e', script], { cwd: ROOT, env: cleanEnv({}) }, (error, stdout, stderr) =>
        error && typeof error.code !== 'number' ? reject(error) : resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });
    expect(result).toMatchObject({ code: 0, stdout: '{"length":512}\n' });
  });
});

describe('USE-lite on a worker thread', () => {
  /** A worker script in a temporary file (plain CommonJS, so the thread needs no loader). */
  function workerScript(source: string): string {
    const file = path.join(tempDir(), 'thread.cjs');
    fs.writeFileSync(file, `const { parentPort } = require('node:worker_threads');\n${source}`);
    return file;
  }

  it('says why the model did not load', async () => {
    const workerFile = workerScript(`parentPort.postMessage({ type: 'load-failed', message: 'model file truncated' });`);
    await expect(loadUseLiteOnThread({ workerFile })).rejects.toThrow('model file truncated');
  });

  it('rejects the load when the thread throws before it is ready', async () => {
    const workerFile = workerScript(`throw new Error('no WebAssembly here');`);
    await expect(loadUseLiteOnThread({ workerFile })).rejects.toThrow('the embedding thread failed: no WebAssembly here');
  });

  it('rejects pending calls with the reason when the thread dies, and refuses later ones', async () => {
    const workerFile = workerScript(`parentPort.on('message', () => process.exit(3));\nparentPort.postMessage({ type: 'loaded' });`);
    const model = await loadUseLiteOnThread({ workerFile });
    expect(model.usable).toBe(true);
    await expect(model.embed(['anything'])).rejects.toThrow('the embedding thread exited (code 3)');
    expect(model.usable).toBe(false);
    await expect(model.embed(['again'])).rejects.toThrow('the embedding thread exited (code 3)');
    await model.dispose();
  });

  it('answers each request by its id, and fails only the request the model failed', async () => {
    const workerFile = workerScript(
      [
        `parentPort.on('message', ({ id, texts }) => {`,
        `  if (texts[0] === 'bad') parentPort.postMessage({ type: 'failed', id, message: 'tensor shape mismatch' });`,
        `  else setTimeout(() => parentPort.postMessage({ type: 'embedded', id, vectors: texts.map((t) => new Float32Array([t.length])) }), texts[0] === 'slow' ? 30 : 0);`,
        `});`,
        `parentPort.postMessage({ type: 'loaded' });`,
      ].join('\n'),
    );
    const model = await loadUseLiteOnThread({ workerFile });
    const [slow, bad, fast] = await Promise.allSettled([model.embed(['slow']), model.embed(['bad']), model.embed(['fast!'])]);
    expect(slow).toMatchObject({ status: 'fulfilled', value: [new Float32Array([4])] });
    expect(bad).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: 'tensor shape mismatch' }) });
    expect(fast).toMatchObject({ status: 'fulfilled', value: [new Float32Array([5])] });
    expect(model.usable).toBe(true);
    await model.dispose();
    expect(model.usable).toBe(false);
    await expect(model.embed(['after'])).rejects.toThrow('the embedding thread was closed');
  });
});
