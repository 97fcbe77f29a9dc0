/**
 * The byte side of the JSON scanner (`json-scanner.ts`): the current chunk and the position in it,
 * the next chunk pulled only when this one is used up, line and column for error messages, and
 * the capture of a value's bytes across chunks, bounded so a huge value is measured, not kept.
 *
 * Why apart from the grammar: what is held in memory (one chunk plus one capture) is decided
 * here alone; the scanner only moves `pos` through `buf` and asks for the next chunk.
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

/** A position in a stream of JSON bytes, with the chunk it is in and the capture in progress. */
export class JsonByteCursor {
  /** The current chunk, and the position of the next byte in it. */
  protected buf: Buffer = EMPTY;
  protected pos = 0;
  /** Absolute offset of buf[0]. */
  private base: number;
  private line = 1;
  private lineStart: number;
  private parts: Buffer[] | null = null;
  private captureFrom = 0;
  /** Bytes of the capture in progress kept in `parts`, and how many it may keep. */
  private kept = 0;
  private keepAtMost = Infinity;
  /** The capture in progress passed its bound: nothing more is kept. */
  private dropped = false;

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

  /** Starts keeping the bytes from the current position on, at most `keepAtMost` of them. */
  protected startCapture(keepAtMost = Infinity): void {
    this.parts = [];
    this.captureFrom = this.pos;
    this.kept = 0;
    this.keepAtMost = keepAtMost;
    this.dropped = false;
  }

  /** The captured bytes, or null when the capture passed its bound. */
  protected endCapture(): Buffer | null {
    const parts = this.parts;
    this.parts = null;
    if (this.dropped || !parts) return null;
    parts.push(this.buf.subarray(this.captureFrom, this.pos));
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Forgets the capture in progress, whatever became of it (after a read that threw, too). */
  protected abandonCapture(): void {
    this.parts = null;
    this.dropped = false;
    this.keepAtMost = Infinity;
  }

  /** Moves to the next non-empty chunk; false at the end of the input. */
  protected fill(): boolean {
    if (this.pos < this.buf.length) return true;
    if (this.parts && this.captureFrom < this.buf.length) {
      const part = this.buf.subarray(this.captureFrom);
      this.parts.push(part);
      this.kept += part.length;
      if (this.kept > this.keepAtMost) {
        // Past the bound: what was kept goes, and nothing more is.
        this.parts = null;
        this.dropped = true;
      }
    }
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
