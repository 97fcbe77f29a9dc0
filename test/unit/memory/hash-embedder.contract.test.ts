import { describe, expect, it } from '@jest/globals';
import { dot } from '../../../src/memory/embeddings/embedder';
import { createHashEmbedder, fnv1a, hashEmbed, stem, tokenize } from '../../../src/vectors/embedders/hash-embedder';
import { describeEmbedderContract } from '../../contracts/embedder-contract';

describeEmbedderContract({ name: 'hash (384)', create: () => createHashEmbedder() });
describeEmbedderContract({ name: 'hash (768, as served by the Ollama double)', create: () => createHashEmbedder({ dimension: 768 }) });

describe('hash embedder', () => {
  it('names its vector space after the version and dimension', () => {
    expect(createHashEmbedder().name).toBe('hash:v1-384');
    expect(createHashEmbedder({ dimension: 64 })).toMatchObject({ name: 'hash:v1-64', dimension: 64 });
  });

  it('rejects a dimension that is not a positive integer', () => {
    expect(() => createHashEmbedder({ dimension: 0 })).toThrow(RangeError);
    expect(() => createHashEmbedder({ dimension: 12.5 })).toThrow(RangeError);
  });

  it('hashes with 32-bit FNV-1a (published test vectors)', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  it('splits lower-cased words of any script, and each pictograph on its own', () => {
    expect(tokenize('Hello, WORLD! Ünïcödé 42')).toEqual(['hello', 'world', 'ünïcödé', '42']);
    expect(tokenize('שלום עולם 🐶🎉')).toEqual(['שלום', 'עולם', '🐶', '🎉']);
    expect(tokenize(' \t.,;!? ')).toEqual([]);
  });

  it.each([
    ['adopted', 'adopt'],
    ['adopting', 'adopt'],
    ['adopts', 'adopt'],
    ['running', 'run'],
    ['puppies', 'puppy'],
    ['boxes', 'box'],
    ['sharply', 'sharp'],
    ['loved', 'lov'],
    ['love', 'lov'],
    ['loving', 'lov'],
    ['glass', 'glass'],
    ['status', 'status'],
    ['this', 'this'],
    ['string', 'string'],
    ['dog', 'dog'],
    ['straße', 'straße'],
  ])('stems %s to %s', (word, expected) => {
    expect(stem(word)).toBe(expected);
  });

  it('treats inflections of the same words as near-identical', () => {
    const a = hashEmbed('She adopted two puppies', 384);
    const b = hashEmbed('she adopts two puppy', 384);
    const unrelated = hashEmbed('quarterly revenue forecast', 384);
    expect(dot(a, b)).toBeGreaterThan(0.6);
    expect(dot(a, unrelated)).toBeLessThan(0.2);
  });

  it('sees word order through bigrams', () => {
    const text = hashEmbed('dog bites man', 384);
    expect(dot(text, hashEmbed('dog bites man', 384))).toBeCloseTo(1, 5);
    expect(dot(text, hashEmbed('man bites dog', 384))).toBeLessThan(0.999);
  });

  it('is stable across releases: a known text keeps its known vector', () => {
    const vector = hashEmbed('I adopted a puppy last week', 16);
    const expected = [0.114, 0.228, -0.228, 0.076, 0.608, -0.456, 0.076, -0.038, -0.38, 0.114, 0, 0, -0.228, 0, -0.114, 0.266];
    expect(Array.from(vector, (value) => Math.round(value * 1000) / 1000)).toEqual(expected);
  });
});
