import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createEmbedder } from '../../src/memory/embeddings/create-embedder';
import { dot, type Embedder } from '../../src/memory/embeddings/embedder';
import { createLocalEmbedder } from '../../src/memory/embeddings/local-embedder';
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

  it('loads the model once for concurrent first calls, and logs the load', async () => {
    const [a, b] = await Promise.all([embedder.embed(['first caller']), embedder.embed(['second caller'])]);
    expect(a[0]).toHaveLength(512);
    expect(b[0]).toHaveLength(512);
    const loads = lines().filter((line) => line.includes('embedding model loaded'));
    expect(loads).toHaveLength(1);
    expect(JSON.parse(loads[0]!)).toMatchObject({ component: 'local-embedder', model: 'local:use-lite-512' });
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

  it('leaves stdout to the program: a process that loads the model prints only its own output', async () => {
    const source = path.join(ROOT, 'src', 'memory', 'embeddings', 'local-embedder.ts');
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
