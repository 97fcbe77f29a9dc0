/**
 * The embedder contract: what every Embedder adapter must do, run against the hash embedder,
 * the local USE-lite model and the Ollama adapter alike (each test file passes a factory).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { dot, type Embedder } from '../../src/memory/embeddings/embedder';

export interface EmbedderContractInit {
  readonly name: string;
  readonly create: () => Promise<Embedder> | Embedder;
  readonly destroy?: (embedder: Embedder) => Promise<void>;
}

/** Paraphrases that share a few words, so lexical embedders can see them too, plus an unrelated sentence. */
const PARAPHRASE = ['I adopted a puppy last week', 'Last week I got a new dog'] as const;
const UNRELATED = 'The stock market fell sharply today';

const PARAPHRASE_PAIRS: readonly (readonly [string, string, string])[] = [
  [PARAPHRASE[0], PARAPHRASE[1], UNRELATED],
  ['My sister moved to Berlin for her new job', 'Her new job took my sister to Berlin', 'Remember to water the tomato plants'],
  ['I am allergic to peanuts', 'Peanuts give me an allergic reaction', 'The train to Lyon leaves at nine'],
];

const MULTILINGUAL = [
  'Café déjà vu — naïve façade',
  'Мы встретились в Москве',
  'مرحبا، كيف حالك اليوم؟',
  'שלום, מה שלומך?',
  '我今天很高兴见到你',
  'Party time 🎉🐶 with friends 👩‍👩‍👧',
  'left\u200fright\u202emixed direction marks',
];

function norm(vector: Float32Array): number {
  return Math.sqrt(dot(vector, vector));
}

function maxDifference(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

export function describeEmbedderContract(init: EmbedderContractInit): void {
  describe(`embedder contract: ${init.name}`, () => {
    let embedder: Embedder;

    beforeAll(async () => {
      embedder = await init.create();
    });
    afterAll(async () => {
      if (embedder) await (init.destroy ? init.destroy(embedder) : embedder.close());
    });

    it('has a name and returns Float32Arrays of exactly `dimension` entries', async () => {
      expect(embedder.name).toMatch(/^[a-z]+:\S+$/);
      expect(Number.isInteger(embedder.dimension)).toBe(true);
      expect(embedder.dimension).toBeGreaterThan(0);
      const vectors = await embedder.embed(['hello world', 'a second, longer sentence about something else']);
      expect(vectors).toHaveLength(2);
      for (const vector of vectors) {
        expect(vector).toBeInstanceOf(Float32Array);
        expect(vector.length).toBe(embedder.dimension);
      }
    });

    it('returns unit-length vectors', async () => {
      const vectors = await embedder.embed([...PARAPHRASE, UNRELATED, 'x', 'Numbers 42 and 3.14']);
      for (const vector of vectors) expect(Math.abs(norm(vector) - 1)).toBeLessThan(1e-3);
    });

    it('is deterministic: the same text twice gives the same vector', async () => {
      const [first] = await embedder.embed([PARAPHRASE[0]]);
      const [second] = await embedder.embed([PARAPHRASE[0]]);
      expect(maxDifference(first!, second!)).toBeLessThan(1e-5);
    });

    it('keeps the order of a batch, and a batch gives what single calls give', async () => {
      const texts = [UNRELATED, PARAPHRASE[1], 'Tomatoes need water', PARAPHRASE[0], 'Zebras are striped'];
      const batch = await embedder.embed(texts);
      expect(batch).toHaveLength(texts.length);
      for (let i = 0; i < texts.length; i++) {
        const [single] = await embedder.embed([texts[i]!]);
        expect(maxDifference(batch[i]!, single!)).toBeLessThan(1e-5);
      }
      expect(dot(batch[0]!, batch[1]!)).toBeLessThan(0.999);
    });

    it('embeds nothing for an empty batch', async () => {
      await expect(embedder.embed([])).resolves.toEqual([]);
    });

    it('gives blank texts the zero vector, without disturbing the rest of the batch', async () => {
      const [empty, spaces, text] = await embedder.embed(['', '  \n\t', PARAPHRASE[0]]);
      expect(empty).toHaveLength(embedder.dimension);
      expect(norm(empty!)).toBe(0);
      expect(norm(spaces!)).toBe(0);
      const [alone] = await embedder.embed([PARAPHRASE[0]]);
      expect(maxDifference(text!, alone!)).toBeLessThan(1e-5);
    });

    it.each(PARAPHRASE_PAIRS)('ranks a paraphrase above an unrelated text: "%s" ~ "%s"', async (a, b, unrelated) => {
      const [va, vb, vu] = await embedder.embed([a, b, unrelated]);
      const paraphrase = dot(va!, vb!);
      expect(paraphrase).toBeGreaterThan(dot(va!, vu!) + 0.05);
      expect(paraphrase).toBeGreaterThan(dot(vb!, vu!) + 0.05);
    });

    it('embeds accented, Cyrillic, Arabic, Hebrew, Chinese, emoji and bidi-control text', async () => {
      const vectors = await embedder.embed(MULTILINGUAL);
      expect(vectors).toHaveLength(MULTILINGUAL.length);
      for (const vector of vectors) {
        expect(vector.length).toBe(embedder.dimension);
        expect(vector.every(Number.isFinite)).toBe(true);
        expect(Math.abs(norm(vector) - 1)).toBeLessThan(1e-3);
      }
      expect(maxDifference(vectors[2]!, vectors[3]!)).toBeGreaterThan(0);
    });
  });
}
