/**
 * A pull scanner over JSON bytes that never holds more than one chunk plus the value it is asked
 * to capture: the streamed import (`stream-validation.ts`, `stream-rows.ts`) walks the outer
 * object and its arrays with it, capturing one array element at a time, which `JSON.parse` then
 * builds exactly as it would have inside the whole document.
 *
 * It checks the whole grammar (so a syntax error anywhere is found before anything is written,
 * as with one `JSON.parse`), counts how deep each value nests without recursion (a 20,000-level
 * value costs a bit per level), and names a syntax error by line and column.
 */

/** Where the scanner's bytes come from: the next chunk (never reused afterwards), or null at the end. */
export interface ByteReader {
  read(): Buffer | null;
}

/** Bad JSON: what was found, and where (line and column count bytes, from 1). */
export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

const EMPTY = Buffer.alloc(0);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

export class JsonScanner {
  private buf: Buffer = EMPTY;
  private pos = 0;
  /** Absolute offset of buf[0]. */
  private base: number;
  private line = 1;
  private lineStart: number;
  private parts: Buffer[] | null = null;
  private captureFrom = 0;
  /** One bit per open container: 1 for an object, 0 for an array. */
  private kinds = new Uint8Array(16);

  constructor(
    private readonly reader: ByteReader,
    startOffset = 0,
  ) {
    this.base = startOffset;
    this.lineStart = startOffset;
  }

  /** Absolute offset of the next byte. */
  offset(): number {
    return this.base + this.pos;
  }

  /** The next byte without consuming it; -1 at the end of the input. */
  peek(): number {
    if (this.pos >= this.buf.length && !this.fill()) return -1;
    return this.buf[this.pos]!;
  }

  /** Skips JSON whitespace. */
  skipWhitespace(): void {
    for (;;) {
      const c = this.peek();
      if (c === 0x20 || c === 0x09 || c === 0x0d) this.pos++;
      else if (c === 0x0a) {
        this.pos++;
        this.line++;
        this.lineStart = this.offset();
      } else return;
    }
  }

  /** Consumes `byte` (after whitespace) or throws a syntax error. */
  expect(byte: number): void {
    this.skipWhitespace();
    if (this.peek() !== byte) throw this.unexpected();
    this.pos++;
  }

  /** True (and consumed) when the next byte after whitespace is `byte`. */
  take(byte: number): boolean {
    this.skipWhitespace();
    if (this.peek() !== byte) return false;
    this.pos++;
    return true;
  }

  /** Throws unless only whitespace is left. */
  expectEnd(): void {
    this.skipWhitespace();
    if (this.peek() !== -1) throw this.unexpected();
  }

  /** A string (an object key), decoded. */
  readString(): string {
    this.skipWhitespace();
    if (this.peek() !== QUOTE) throw this.unexpected();
    this.startCapture();
    this.scanString();
    return JSON.parse(this.endCapture().toString('utf8')) as string;
  }

  /** Consumes one value and returns its bytes. */
  captureValue(): { bytes: Buffer; depth: number; start: number } {
    this.skipWhitespace();
    const start = this.offset();
    this.startCapture();
    const depth = this.skipValue();
    return { bytes: this.endCapture(), depth, start };
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
            this.key();
            continue;
          }
        } else if (this.peek() === 0x5d) {
          this.pos++;
          depth--;
        } else continue;
      } else if (c === QUOTE) this.scanString();
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
          if (inObject) this.key();
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

  /** A key and its colon, inside an object. */
  private key(): void {
    this.skipWhitespace();
    if (this.peek() !== QUOTE) throw this.unexpected();
    this.scanString();
    this.expect(0x3a);
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

  private scanString(): void {
    this.pos++;
    for (;;) {
      const buf = this.buf;
      const n = buf.length;
      let i = this.pos;
      while (i < n) {
        const c = buf[i]!;
        if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
        i++;
      }
      this.pos = i;
      if (i >= n) {
        if (!this.fill()) throw this.unexpected('Unterminated string');
        continue;
      }
      const c = buf[i]!;
      if (c === QUOTE) {
        this.pos++;
        return;
      }
      if (c < 0x20) throw this.unexpected('Bad control character in string');
      this.pos++;
      const e = this.peek();
      if (e === 0x75) {
        this.pos++;
        for (let k = 0; k < 4; k++) {
          if (!isHex(this.peek())) throw this.unexpected('Bad Unicode escape');
          this.pos++;
        }
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) this.pos++;
      else throw this.unexpected('Bad escaped character');
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

  private startCapture(): void {
    this.parts = [];
    this.captureFrom = this.pos;
  }

  private endCapture(): Buffer {
    const parts = this.parts ?? [];
    parts.push(this.buf.subarray(this.captureFrom, this.pos));
    this.parts = null;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Moves to the next non-empty chunk; false at the end of the input. */
  private fill(): boolean {
    if (this.pos < this.buf.length) return true;
    if (this.parts && this.captureFrom < this.buf.length) this.parts.push(this.buf.subarray(this.captureFrom));
    this.captureFrom = 0;
    for (;;) {
      const next = this.reader.read();
      this.base += this.buf.length;
      this.pos = 0;
      if (next === null) {
        this.buf = EMPTY;
        return false;
      }
      this.buf = next;
      if (next.length > 0) return true;
    }
  }

  /** The error for the byte at the current position (or the end of the input). */
  unexpected(reason?: string): JsonSyntaxError {
    const c = this.peek();
    const offset = this.offset();
    const where = `line ${this.line}, column ${offset - this.lineStart + 1}`;
    if (c === -1) return new JsonSyntaxError(`${reason ?? 'Unexpected end of JSON input'} at the end of the input (${where})`, offset);
    const shown = c >= 0x20 && c < 0x7f ? JSON.stringify(String.fromCharCode(c)) : `byte 0x${c.toString(16).padStart(2, '0')}`;
    return new JsonSyntaxError(`${reason ? `${reason}: ` : ''}unexpected ${shown} at ${where}`, offset);
  }
}
