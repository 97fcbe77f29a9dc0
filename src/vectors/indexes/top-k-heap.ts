/**
 * Bounded min-heaps over typed arrays: the top-k selections of the int8 scan.
 *
 * Why by hand: the scan keeps the k largest of 100,000 scores in one pass per search, and a
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

/**
 * The best `capacity` slots by value, in one pass: between equal values the smaller tie key
 * (a rowid) is the better, so the selection is the same whatever order the slots come in.
 */
export interface TopSlots {
  /** Considers a slot with its value and tie key. */
  offer(value: number, slot: number, tie: number): void;
  /** The slots kept, best first, with their values. */
  best(): Array<{ slot: number; value: number }>;
}

/** An empty {@link TopSlots} keeping at most `capacity` slots. */
export function createTopSlots(capacity: number): TopSlots {
  const values = new Float64Array(capacity);
  const ties = new Float64Array(capacity);
  const slots = new Int32Array(capacity);
  let count = 0;
  /** Whether entry a ranks below entry b (heap order: the worst kept at the root). */
  const worse = (a: number, b: number) => values[a]! < values[b]! || (values[a] === values[b] && ties[a]! > ties[b]!);
  const swap = (a: number, b: number) => {
    [values[a], values[b]] = [values[b]!, values[a]!];
    [ties[a], ties[b]] = [ties[b]!, ties[a]!];
    [slots[a], slots[b]] = [slots[b]!, slots[a]!];
  };
  const siftDown = () => {
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let lowest = i;
      if (left < count && worse(left, lowest)) lowest = left;
      if (right < count && worse(right, lowest)) lowest = right;
      if (lowest === i) return;
      swap(lowest, i);
      i = lowest;
    }
  };
  return {
    offer(value, slot, tie) {
      if (capacity === 0) return;
      if (count < capacity) {
        let i = count++;
        values[i] = value;
        ties[i] = tie;
        slots[i] = slot;
        while (i > 0) {
          const parent = (i - 1) >> 1;
          if (!worse(i, parent)) break;
          swap(i, parent);
          i = parent;
        }
        return;
      }
      if (value < values[0]! || (value === values[0] && tie >= ties[0]!)) return;
      values[0] = value;
      ties[0] = tie;
      slots[0] = slot;
      siftDown();
    },
    best() {
      const order = Array.from({ length: count }, (_, i) => i);
      order.sort((a, b) => values[b]! - values[a]! || ties[a]! - ties[b]!);
      return order.map((i) => ({ slot: slots[i]!, value: values[i]! }));
    },
  };
}
