/**
 * The in-memory int8 copy of one scope's vectors and its scan: the quantized search path of the
 * sqlite-vec index for scopes too large for an exact scan.
 *
 * Each vector is kept as an int8 code of its unit vector (512 bytes for 512 dimensions) and a
 * scale; the WebAssembly kernel scores all codes against the query, and the error bound of each
 * int8 score decides which vectors could still be in the true top `limit`. Those candidates are
 * then re-ranked by exact cosine by the index, so the result is the exact top `limit` unless a
 * rounding error exceeds {@link ERROR_SIGMAS} standard deviations or the candidate cap is reached.
 */
import type { VectorKind } from '../../memory/vectors/vector-index';
import { norm } from './float-vectors';
import { instantiateInt8Dots, type WasmModule } from './int8-dot-kernel';
import { createTopSlots, heapPush, heapReplaceTop } from './top-k-heap';

/** Width of the error bound around an int8 score, in standard deviations of the rounding error. */
const ERROR_SIGMAS = 6;
const KIND_CODES: Record<VectorKind, number> = { episode: 0, memory: 1 };

/**
 * The int8 code of a vector, normalized first: code[i] = round(v[i] / |v| / scale), with the scale
 * chosen so the largest component maps to ±127 (so the rounding error of each component is at most
 * scale / 2).
 */
export function quantize(vector: Float32Array): { code: Buffer; scale: number } {
  const length = norm(vector);
  let max = 0;
  for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]!));
  const scale = max / length / 127;
  const code = Buffer.alloc(vector.length);
  const values = new Int8Array(code.buffer, code.byteOffset, code.length);
  const factor = 1 / (length * scale);
  for (let i = 0; i < vector.length; i++) values[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! * factor)));
  return { code, scale };
}

export interface ScopeScan {
  /** `scope_versions.version` this copy reflects. */
  version: number;
  /** `PRAGMA data_version` at which the version was last checked. */
  verifiedAt: number;
  /** Use counter of the last search, for least-recently-used eviction. */
  lastUsed: number;
  /** Vectors held. */
  readonly size: number;
  /** Memory held, for the budget of all scans together. */
  bytes(): number;
  /** Inserts or replaces the code of a rowid. */
  set(rowid: number, kind: VectorKind, code: Uint8Array, scale: number): void;
  /** Forgets a rowid (the last slot moves into its place). */
  remove(rowid: number): void;
  /**
   * `rerank`: rowids that may be in the top `limit` by cosine: every vector whose int8 score plus
   * its error bound reaches the `limit`-th best score minus its error bound; at most `cap` of
   * them (the best int8 scores) when more qualify. `estimated`: the best `estimatedTop` by int8
   * score, best first, with that score as an estimate of the cosine (none when 0).
   */
  candidates(
    query: Float32Array,
    limit: number,
    kind: VectorKind | undefined,
    cap: number,
    estimatedTop: number,
  ): { rerank: number[]; estimated: Array<{ rowid: number; score: number }> };
}

/**
 * What a scan of `size` vectors will hold in memory, with room to grow by half (checked against the
 * budget before loading).
 */
export function estimateScanBytes(size: number, dimension: number): number {
  return Math.ceil(size * 1.5) * (paddedDimension(dimension) + 4 + 8 + 4 + 1 + 48);
}

/** Codes are padded to a multiple of 16 bytes: the kernel reads 16 components per turn. */
function paddedDimension(dimension: number): number {
  return Math.ceil(dimension / 16) * 16;
}

/** An empty scan with room for `expectedSize` vectors of `dimension`, scored by its own instance of the kernel. */
export function createScopeScan(kernel: WasmModule, dimension: number, expectedSize: number): ScopeScan {
  const stride = paddedDimension(dimension);
  const codesOffset = stride * 2; // after the int16 query; a multiple of 16
  const { memory, dots } = instantiateInt8Dots(kernel);
  let capacity = 0;
  let size = 0;
  let rowids = new Float64Array(0);
  let scales = new Float32Array(0);
  let kinds = new Uint8Array(0);
  const slotOf = new Map<number, number>();
  // Largest query component so that 127 · q · stride cannot overflow an int32 accumulator.
  const queryMax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));

  const scoresOffset = () => codesOffset + capacity * stride;

  function grow(minimum: number): void {
    const next = Math.max(minimum, Math.ceil(capacity * 1.5), 256);
    const needed = codesOffset + next * stride + next * 4;
    const pages = Math.ceil(needed / 65536) - memory.buffer.byteLength / 65536;
    if (pages > 0) memory.grow(pages);
    const grownRowids = new Float64Array(next);
    grownRowids.set(rowids.subarray(0, size));
    const grownScales = new Float32Array(next);
    grownScales.set(scales.subarray(0, size));
    const grownKinds = new Uint8Array(next);
    grownKinds.set(kinds.subarray(0, size));
    rowids = grownRowids;
    scales = grownScales;
    kinds = grownKinds;
    capacity = next;
  }

  grow(Math.max(expectedSize, 1));

  const scan: ScopeScan = {
    version: 0,
    verifiedAt: -1,
    lastUsed: 0,
    get size() {
      return size;
    },
    bytes: () => memory.buffer.byteLength + capacity * (8 + 4 + 1) + slotOf.size * 48,
    set(rowid, kind, code, scale) {
      let slot = slotOf.get(rowid);
      if (slot === undefined) {
        if (size === capacity) grow(size + 1);
        slot = size++;
        slotOf.set(rowid, slot);
        rowids[slot] = rowid;
      }
      const target = new Uint8Array(memory.buffer, codesOffset + slot * stride, stride);
      target.set(code);
      target.fill(0, code.length);
      scales[slot] = scale;
      kinds[slot] = KIND_CODES[kind];
    },
    remove(rowid) {
      const slot = slotOf.get(rowid);
      if (slot === undefined) return;
      const last = size - 1;
      if (slot !== last) {
        const lastAt = codesOffset + last * stride;
        new Uint8Array(memory.buffer).copyWithin(codesOffset + slot * stride, lastAt, lastAt + stride);
        rowids[slot] = rowids[last]!;
        scales[slot] = scales[last]!;
        kinds[slot] = kinds[last]!;
        slotOf.set(rowids[slot]!, slot);
      }
      slotOf.delete(rowid);
      size = last;
    },
    candidates(query, limit, kind, cap, estimatedTop) {
      let max = 0;
      let squares = 0;
      for (let i = 0; i < query.length; i++) {
        max = Math.max(max, Math.abs(query[i]!));
        squares += query[i]! * query[i]!;
      }
      const queryNorm = Math.sqrt(squares);
      const factor = queryMax / max;
      const q16 = new Int16Array(memory.buffer, 0, stride);
      for (let i = 0; i < stride; i++) q16[i] = i < query.length ? Math.round(query[i]! * factor) : 0;
      const out = scoresOffset();
      dots(0, codesOffset, size, stride, out);
      const raw = new Int32Array(memory.buffer, out, size);
      const unit = 1 / factor;
      // Rounding errors of the codes (scale/2 per component) and of the query (unit/2), as
      // standard deviations of a sum of uniform errors, widened to ERROR_SIGMAS of them.
      const perScale = (ERROR_SIGMAS / Math.sqrt(12)) * queryNorm;
      const fromQuery = (ERROR_SIGMAS / Math.sqrt(12)) * unit;
      const wanted = kind === undefined ? -1 : KIND_CODES[kind];

      // One pass over the scores. The limit-th best lower bound so far only rises, so every vector
      // whose upper bound reaches the final one also reached it when it was seen: those kept then
      // are checked again against the final bound below. The best estimatedTop by int8 score are
      // kept on the way (the codes are of unit vectors, so score · unit / |query| estimates the cosine).
      const lowers = new Float64Array(limit);
      let filled = 0;
      let threshold = -Infinity;
      const seen: number[] = [];
      const top = createTopSlots(estimatedTop);
      for (let i = 0; i < size; i++) {
        if (wanted >= 0 && kinds[i] !== wanted) continue;
        const scale = scales[i]!;
        const approx = raw[i]! * scale;
        const value = approx * unit;
        const margin = perScale * scale + fromQuery;
        const lower = value - margin;
        if (filled < limit) {
          heapPush(lowers, filled++, lower);
          if (filled === limit) threshold = lowers[0]!;
        } else if (lower > lowers[0]!) {
          heapReplaceTop(lowers, limit, lower);
          threshold = lowers[0]!;
        }
        if (value + margin >= threshold) seen.push(i);
        if (estimatedTop > 0) top.offer(approx, i, rowids[i]!);
      }
      const slots: number[] = [];
      for (const i of seen) {
        const scale = scales[i]!;
        if (raw[i]! * scale * unit + (perScale * scale + fromQuery) >= threshold) slots.push(i);
      }
      const approx = (i: number) => raw[i]! * scales[i]!;
      if (slots.length > cap) {
        slots.sort((a, b) => approx(b) - approx(a));
        slots.length = cap;
      }
      const rerank = slots.map((slot) => rowids[slot]!);
      const estimated = top.best().map(({ slot, value }) => ({ rowid: rowids[slot]!, score: (value * unit) / queryNorm }));
      return { rerank, estimated };
    },
  };
  return scan;
}
