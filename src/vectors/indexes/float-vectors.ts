/**
 * Float vector arithmetic and the byte form sqlite-vec stores (`float[N]` columns are little-endian
 * float32 blobs): what the index needs to compare a query with stored vectors exactly.
 */

/** Euclidean length; a zero length means a vector with no direction to compare. */
export function norm(vector: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}

/** Dot product, unrolled by four: the exact re-ranking computes it for hundreds of vectors per search. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n = a.length - (a.length % 4);
  let i = 0;
  for (; i < n; i += 4) {
    s0 += a[i]! * b[i]!;
    s1 += a[i + 1]! * b[i + 1]!;
    s2 += a[i + 2]! * b[i + 2]!;
    s3 += a[i + 3]! * b[i + 3]!;
  }
  for (; i < a.length; i++) s0 += a[i]! * b[i]!;
  return s0 + s1 + s2 + s3;
}

/** The vector's bytes as a blob for sqlite-vec, without copying. */
export function floatBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A float32 view of a blob read from sqlite-vec (a copy only when the blob is misaligned). */
export function float32View(blob: Buffer): Float32Array {
  if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
  return new Float32Array(new Uint8Array(blob).buffer);
}
