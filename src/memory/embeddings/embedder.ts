/**
 * The Embedder port: turns texts into vectors whose cosine similarity means "about the same
 * thing". Owned by the memory layer; adapters live beside it (`<vendor>-embedder.ts`).
 */

export interface Embedder {
  /**
   * Stable identity of the vector space, recorded with every vector index and on every embedded
   * row (`Episode.embeddedWith`), e.g. `local:use-lite-512` or `ollama:nomic-embed-text`.
   * Two embedders with the same name must produce comparable vectors.
   */
  readonly name: string;
  /** Length of every vector this embedder returns. */
  readonly dimension: number;
  /**
   * Embeds a batch of texts. Returns one L2-normalized vector per text, in order (so cosine
   * similarity is a dot product). Throws an AppError on failure; never returns partial batches.
   */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /** Releases models or connections. */
  close(): Promise<void>;
}

/** Scales a vector to unit length in place (a zero vector stays zero) and returns it. */
export function normalizeVector(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** Dot product; equals cosine similarity for normalized vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
