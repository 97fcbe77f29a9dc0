/**
 * The file a streamed import reads: an export on disk (the CLI's file), or a request body spooled
 * to a temporary file as it arrives (the admin API, and the CLI's standard input), so no import
 * holds its document in memory.
 *
 * A spooled body is encrypted with AES-256-CTR under a random key that lives only in this
 * process's memory: the plaintext of a person's memory never reaches the disk (the store may be
 * encrypted at rest), and a file left behind by a killed process is noise. CTR lets a reader
 * start at any byte, which the import needs to read memories in supersession order.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ByteReader } from './json-byte-cursor';

/** An export on disk, and the key of its encryption when it was spooled. */
export interface ImportFile {
  readonly path: string;
  readonly cipher?: { readonly key: Uint8Array; readonly iv: Uint8Array };
}

/** Reads an {@link ImportFile} from any offset, synchronously (the import thread's pace). */
export interface ImportFileReader {
  /** Chunks from `start` to the end of the file. */
  from(start: number): ByteReader;
  /** The bytes of [start, end). */
  range(start: number, end: number): Buffer;
  close(): void;
}

const CHUNK = 1024 * 1024;
type Listener = Parameters<Readable['on']>[1];
const ALGORITHM = 'aes-256-ctr';

/** The CTR counter block for byte `offset` (the IV is the counter of byte 0). */
function ivAt(iv: Uint8Array, offset: number): Buffer {
  const counter = (BigInt(`0x${Buffer.from(iv).toString('hex')}`) + BigInt(Math.floor(offset / 16))) & ((1n << 128n) - 1n);
  return Buffer.from(counter.toString(16).padStart(32, '0'), 'hex');
}

/** A decipher positioned at `offset`. */
function decipherAt(file: ImportFile, offset: number) {
  const cipher = file.cipher!;
  const decipher = createDecipheriv(ALGORITHM, cipher.key, ivAt(cipher.iv, offset));
  const skip = offset % 16;
  if (skip > 0) decipher.update(Buffer.alloc(skip));
  return decipher;
}

/** The body is larger than allowed; `spoolToFile` removed what it had written. */
export class SpoolTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the body is larger than ${limit} bytes`);
  }
}

/**
 * Writes `input` to a new encrypted temporary file (in `dir`, default the system's), at most
 * `limit` bytes. On any failure (too large, the client went away, a full disk) the file is gone
 * before this rejects. Past the limit `input` is left unread, not destroyed, so an HTTP server
 * can still answer 413 before it closes the connection.
 */
export async function spoolToFile(input: Readable, options: { limit: number; dir?: string }): Promise<ImportFile> {
  const folder = await fs.promises.mkdtemp(path.join(options.dir ?? os.tmpdir(), 'nocturne-import-'));
  const file: ImportFile = { path: path.join(folder, 'body.spool'), cipher: { key: randomBytes(32), iv: randomBytes(16) } };
  const cipher = createCipheriv(ALGORITHM, file.cipher!.key, file.cipher!.iv);
  const written = pipeline(cipher, fs.createWriteStream(file.path, { mode: 0o600 }));
  written.catch(() => undefined);
  let bytes = 0;
  const listeners: Array<[string, Listener]> = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let ended = false;
      const on = (event: string, listener: Listener) => {
        listeners.push([event, listener]);
        input.on(event, listener);
      };
      on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > options.limit) return reject(new SpoolTooLarge(options.limit));
        if (!cipher.write(chunk)) {
          input.pause();
          cipher.once('drain', () => input.resume());
        }
      });
      on('end', () => {
        ended = true;
        cipher.end();
        resolve();
      });
      on('error', (error: Error) => reject(error));
      on('close', () => {
        if (!ended) reject(new Error('the body ended before it was complete (the client went away)'));
      });
      written.catch(reject);
    });
    await written;
  } catch (error) {
    cipher.destroy();
    await written.catch(() => undefined);
    await removeImportFile(file);
    throw error;
  } finally {
    for (const [event, listener] of listeners) input.off(event, listener);
  }
  return file;
}

/** Removes a spooled file and its folder (idempotent; a file of the user's is never removed). */
export async function removeImportFile(file: ImportFile): Promise<void> {
  if (!file.cipher) return;
  await fs.promises.rm(path.dirname(file.path), { recursive: true, force: true });
}

/** Opens `file` for the import thread. */
export function openImportFile(file: ImportFile): ImportFileReader {
  const fd = fs.openSync(file.path, 'r');
  const readAt = (position: number, length: number): Buffer => {
    const out = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const n = fs.readSync(fd, out, filled, length - filled, position + filled);
      if (n === 0) break;
      filled += n;
    }
    return filled === length ? out : out.subarray(0, filled);
  };
  return {
    from(start) {
      let position = start;
      const decipher = file.cipher ? decipherAt(file, start) : undefined;
      return {
        read() {
          const raw = readAt(position, CHUNK);
          if (raw.length === 0) return null;
          position += raw.length;
          return decipher ? decipher.update(raw) : raw;
        },
      };
    },
    range(start, end) {
      const raw = readAt(start, end - start);
      return file.cipher ? decipherAt(file, start).update(raw) : raw;
    },
    close: () => fs.closeSync(fd),
  };
}
