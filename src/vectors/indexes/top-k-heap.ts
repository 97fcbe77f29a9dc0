/**
 * Bounded min-heaps over a Float64Array: the top-k selection of the int8 scan.
 *
 * Why by hand: the scan keeps the k largest of 100,000 scores several times per search, and a
 * typed-array heap does that in O(n log k) without allocating per element (sqlite-vec's own top-k
 * is O(n·k), which is why its quantized columns were too slow here).
 */

/** Min-heap of the `length` largest values seen (heap[0] is the smallest of them): adds `value` at `length`. */
export function heapPush(heap: Float64Array, length: number, value: number): void {
  let i = length;
  heap[i] = value;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= heap[i]!) break;
    [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
    i = parent;
  }
}

/** Replaces the smallest of the `length` values kept (heap[0]) with a larger `value`. */
export function heapReplaceTop(heap: Float64Array, length: number, value: number): void {
  heap[0] = value;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    if (left < length && heap[left]! < heap[smallest]!) smallest = left;
    if (right < length && heap[right]! < heap[smallest]!) smallest = right;
    if (smallest === i) return;
    [heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!];
    i = smallest;
  }
}
