/**
 * A pull scanner over JSON bytes that never holds more than one chunk plus the value it is asked
 * to capture: the streamed import (`stream-validation.ts`, `stream-rows.ts`) walks the outer
 * object and its arrays with it, capturing one array element at a time, which `JSON.parse` then
 * builds exactly as it would have inside the whole document.
 *
 * It checks the whole grammar (so a syntax error anywhere is found before anything is written,
 * as with one `JSON.parse`), counts how deep each value nests without recursion (a 20,000-level
 * value costs a bit per level), and names a syntax error by line and column.
 *
 * A capture can be bounded ({@link JsonScanner.captureBounded}): past its bound the value is
 * still read to its end (its grammar checked, its largest string measured) but no longer kept, so
 * a 200 MiB string in an export costs one chunk of memory, not 200 MiB three times over.
 *
 * The chunks, positions, error locations and captures are the cursor's (`json-byte-cursor.ts`);
 * this file is the grammar.
 */
import { JsonByteCursor } from './json-byte-cursor';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Longest field name a bounded capture decodes to name where its largest string is. */
const MAX_FIELD_NAME_BYTES = 256;

/** The largest string of a captured value, and the field of the value it is in. */
export interface LargestString {
  /** Its size decoded (escapes resolved), in UTF-8 bytes. */
  readonly bytes: number;
  /** The value's own key it is under (`content` of an episode), when the value is an object. */
  readonly field?: string;
}

/** A bounded capture: the bytes, or (past the bound) only what was measured. */
export type BoundedCapture =
  | { readonly bytes: Buffer; readonly depth: number; readonly start: number; readonly size: number; readonly largest: LargestString }
  | { readonly bytes: null; readonly depth: number; readonly start: number; readonly size: number; readonly largest: LargestString };

/** UTF-8 bytes of the code unit a `\uXXXX` escape stands for (each half of a surrogate pair counts 2). */
function escapedBytes(unit: number): number {
  if (unit < 0x80) return 1;
  if (unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff)) return 2;
  return 3;
}

function hexValue(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** The JSON grammar over a {@link JsonByteCursor}: values skipped, captured or measured, and strings read. */
export class JsonScanner extends JsonByteCursor {
  /** Measuring strings (a bounded capture): the largest so far and the current field. */
  private measuring = false;
  private largest: LargestString = { bytes: 0 };
  private field: string | undefined;
  /** One bit per open container: 1 for an object, 0 for an array. */
  private kinds = new Uint8Array(16);

  /** A string (an object key), decoded; null (read, not kept) when it takes more than `maxBytes` as JSON. */
  readString(maxBytes = Infinity): string | null {
    this.skipWhitespace();
    if (this.peek() !== QUOTE) throw this.unexpected();
    const start = this.offset();
    this.startCapture(maxBytes);
    try {
      this.scanString();
      const bytes = this.endCapture();
      return bytes === null || this.offset() - start > maxBytes ? null : (JSON.parse(bytes.toString('utf8')) as string);
    } finally {
      this.abandonCapture();
    }
  }

  /**
   * Consumes one value and returns its bytes while they are at most `maxBytes` (give or take a
   * chunk); past that, reads it to the end without keeping it and returns `bytes: null`. Either
   * way says how large it was and its largest string (decoded size, and the value's field it is
   * under), so the caller can say what was too large without holding it.
   */
  captureBounded(maxBytes: number): BoundedCapture {
    this.skipWhitespace();
    const start = this.offset();
    this.startCapture(maxBytes);
    this.measuring = true;
    this.largest = { bytes: 0 };
    this.field = undefined;
    try {
      const depth = this.skipValue();
      const size = this.offset() - start;
      const bytes = this.endCapture();
      return { bytes: bytes !== null && size <= maxBytes ? bytes : null, depth, start, size, largest: this.largest };
    } finally {
      this.measuring = false;
      this.abandonCapture();
    }
  }

  /** Consumes one value and returns its bytes. */
  captureValue(): { bytes: Buffer; depth: number; start: number } {
    this.skipWhitespace();
    const start = this.offset();
    this.startCapture();
    const depth = this.skipValue();
    return { bytes: this.endCapture()!, depth, start };
  }

  /**
   * Consumes one value (after whitespace), checking its grammar, and returns how deep it nests
   * (0 for a scalar, 1 for `[]` or `{}`, 2 for `[[]]`...).
   */
  skipValue(): number {
    let depth = 0;
    let max = 0;
    for (;;) {
      // A value.
      this.skipWhitespace();
      const c = this.peek();
      if (c === 0x7b || c === 0x5b) {
        this.pos++;
        this.push(depth, c === 0x7b);
        depth++;
        if (depth > max) max = depth;
        this.skipWhitespace();
        if (c === 0x7b) {
          if (this.peek() === 0x7d) {
            this.pos++;
            depth--;
          } else {
            this.key(depth);
            continue;
          }
        } else if (this.peek() === 0x5d) {
          this.pos++;
          depth--;
        } else continue;
      } else if (c === QUOTE) this.measure(this.scanString(), depth);
      else if (c === 0x74) this.literal('true');
      else if (c === 0x66) this.literal('false');
      else if (c === 0x6e) this.literal('null');
      else if (c === 0x2d || isDigit(c)) this.scanNumber();
      else throw this.unexpected();
      // After a value: close containers until one goes on.
      for (;;) {
        if (depth === 0) return max;
        this.skipWhitespace();
        const next = this.peek();
        const inObject = this.isObject(depth - 1);
        if (next === 0x2c) {
          this.pos++;
          if (inObject) this.key(depth);
          break;
        }
        if (next === (inObject ? 0x7d : 0x5d)) {
          this.pos++;
          depth--;
          continue;
        }
        throw this.unexpected();
      }
    }
  }

  /** A key and its colon, inside an object `depth` levels into the value being read. */
  private key(depth: number): void {
    this.skipWhitespace();
    if (this.peek() !== QUOTE) throw this.unexpected();
    const chunk = this.buf;
    const from = this.pos;
    const bytes = this.scanString();
    if (this.measuring) {
      if (depth === 1) {
        // The value's own field names where its largest string is; a key split across chunks (or
        // absurdly long) is left unnamed rather than kept.
        this.field = this.buf === chunk && this.pos - from <= MAX_FIELD_NAME_BYTES ? (JSON.parse(chunk.toString('utf8', from, this.pos)) as string) : undefined;
      }
      this.measure(bytes, depth);
    }
    this.expect(0x3a);
  }

  /** Notes a string of `bytes` decoded bytes read `depth` levels into a measured value. */
  private measure(bytes: number, depth: number): void {
    if (this.measuring && bytes > this.largest.bytes) this.largest = depth === 0 ? { bytes } : { bytes, field: this.field };
  }

  private push(depth: number, isObject: boolean): void {
    const index = depth >> 3;
    if (index >= this.kinds.length) {
      const bigger = new Uint8Array(this.kinds.length * 2);
      bigger.set(this.kinds);
      this.kinds = bigger;
    }
    const bit = 1 << (depth & 7);
    this.kinds[index] = isObject ? this.kinds[index]! | bit : this.kinds[index]! & ~bit;
  }

  private isObject(depth: number): boolean {
    return (this.kinds[depth >> 3]! & (1 << (depth & 7))) !== 0;
  }

  /** Consumes a string; returns its size decoded, in UTF-8 bytes. */
  private scanString(): number {
    this.pos++;
    let decoded = 0;
    for (;;) {
      const buf = this.buf;
      const n = buf.length;
      let i = this.pos;
      while (i < n) {
        const c = buf[i]!;
        if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
        i++;
      }
      decoded += i - this.pos;
      this.pos = i;
      if (i >= n) {
        if (!this.fill()) throw this.unexpected('Unterminated string');
        continue;
      }
      const c = buf[i]!;
      if (c === QUOTE) {
        this.pos++;
        return decoded;
      }
      if (c < 0x20) throw this.unexpected('Bad control character in string');
      this.pos++;
      const e = this.peek();
      if (e === 0x75) {
        this.pos++;
        let unit = 0;
        for (let k = 0; k < 4; k++) {
          const h = this.peek();
          if (!isHex(h)) throw this.unexpected('Bad Unicode escape');
          unit = unit * 16 + hexValue(h);
          this.pos++;
        }
        decoded += escapedBytes(unit);
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        this.pos++;
        decoded += 1;
      } else throw this.unexpected('Bad escaped character');
    }
  }

  private scanNumber(): void {
    if (this.peek() === 0x2d) this.pos++;
    const first = this.peek();
    if (first === 0x30) this.pos++;
    else if (isDigit(first)) this.digits();
    else throw this.unexpected('No number after minus sign');
    if (this.peek() === 0x2e) {
      this.pos++;
      if (!isDigit(this.peek())) throw this.unexpected('Unterminated fractional number');
      this.digits();
    }
    const e = this.peek();
    if (e === 0x65 || e === 0x45) {
      this.pos++;
      const sign = this.peek();
      if (sign === 0x2b || sign === 0x2d) this.pos++;
      if (!isDigit(this.peek())) throw this.unexpected('Exponent part is missing a number');
      this.digits();
    }
  }

  private digits(): void {
    while (isDigit(this.peek())) this.pos++;
  }

  private literal(word: string): void {
    for (let k = 0; k < word.length; k++) {
      if (this.peek() !== word.charCodeAt(k)) throw this.unexpected();
      this.pos++;
    }
  }
}
