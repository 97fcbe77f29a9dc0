/**
 * A deterministic, dependency-free embedder built from lexical features and feature hashing.
 *
 * It exists for two reasons: tests need vectors whose similarities mean something without
 * loading a neural model, and a deployment without the local model or Ollama still needs a
 * vector space that ranks "the same words, roughly" above "unrelated words". It sees spelling,
 * not meaning: "dog" and "puppy" are as far apart as "dog" and "stock".
 */
import { normalizeVector, type Embedder } from '../../memory/embeddings/embedder';

export interface HashEmbedderOptions {
  /** Number of hash buckets, i.e. the vector length. More buckets mean fewer collisions. */
  readonly dimension?: number;
}

/** Feature weights: whole words say the most, word pairs add order, trigrams catch typos and inflections. */
const UNIGRAM_WEIGHT = 1.0;
const BIGRAM_WEIGHT = 0.5;
const TRIGRAM_WEIGHT = 0.3;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Words are runs of letters (with their combining marks) or digits; each pictograph counts as a word of its own. */
const TOKEN = /[\p{L}\p{M}\p{N}]+|\p{Extended_Pictographic}/gu;
const VOWEL = /[aeiouy]/;

/** FNV-1a over UTF-16 code units: fast, stable across platforms and releases, good enough spread for bucketing. */
export function fnv1a(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

/** Lower-cased words of a text, in order (NFKC first, so full-width and ligature forms match their plain spelling). */
export function tokenize(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(TOKEN) ?? [];
}

function undouble(stem: string): string {
  const last = stem.at(-1);
  return last !== undefined && last === stem.at(-2) && !'lsz'.includes(last) && /[a-z]/.test(last) ? stem.slice(0, -1) : stem;
}

function dropSilentE(stem: string): string {
  return stem.length > 3 && stem.endsWith('e') ? stem.slice(0, -1) : stem;
}

/**
 * A light English stemmer: strips -ies, -ied, -ing, -ed, -es, -s and -ly so that "adopted",
 * "adopting" and "adopts" share a feature. Deliberately conservative (a stem keeps at least
 * three letters and a vowel); words of other scripts pass through unchanged.
 */
export function stem(word: string): string {
  if (word.length <= 3 || !/^[a-z]+$/.test(word)) return word;
  if (/(ies|ied)$/.test(word) && word.length > 4) return `${word.slice(0, -3)}y`;
  for (const suffix of ['ing', 'ed']) {
    const base = word.slice(0, -suffix.length);
    if (word.endsWith(suffix) && base.length >= 3 && VOWEL.test(base)) return dropSilentE(undouble(base));
  }
  if (word.endsWith('ly') && word.length > 5) return word.slice(0, -2);
  if (/(ss|sh|ch|x|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !/(ss|us|is)$/.test(word)) return dropSilentE(word.slice(0, -1));
  return dropSilentE(word);
}

/** Adds one hashed feature: the low bits pick the bucket, the top bit picks the sign so collisions cancel out on average. */
function addFeature(vector: Float32Array, feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const bucket = (hash & 0x7fffffff) % vector.length;
  vector[bucket]! += hash & 0x80000000 ? -weight : weight;
}

function characterTrigrams(word: string): string[] {
  const chars = Array.from(`#${word}#`);
  const grams: string[] = [];
  for (let i = 0; i + 3 <= chars.length; i++) grams.push(chars.slice(i, i + 3).join(''));
  return grams;
}

/** Embeds one text into a fresh unit vector (the zero vector when it has no words). */
export function hashEmbed(text: string, dimension: number): Float32Array {
  const vector = new Float32Array(dimension);
  const words = tokenize(text);
  const stems = words.map(stem);
  for (let i = 0; i < words.length; i++) {
    addFeature(vector, `w:${stems[i]}`, UNIGRAM_WEIGHT);
    if (i > 0) addFeature(vector, `b:${stems[i - 1]} ${stems[i]}`, BIGRAM_WEIGHT);
    for (const gram of characterTrigrams(words[i]!)) addFeature(vector, `c:${gram}`, TRIGRAM_WEIGHT);
  }
  return normalizeVector(vector);
}

/**
 * Creates the hash embedder. Its name carries the dimension and a version, because any change
 * to the features or the hash makes old vectors incomparable and must force a re-index.
 */
export function createHashEmbedder({ dimension = 384 }: HashEmbedderOptions = {}): Embedder {
  if (!Number.isInteger(dimension) || dimension < 1) {
    throw new RangeError(`hash embedder dimension must be a positive integer, got ${dimension}`);
  }
  return {
    name: `hash:v1-${dimension}`,
    dimension,
    async embed(texts) {
      return texts.map((text) => hashEmbed(text, dimension));
    },
    async close() {},
  };
}
