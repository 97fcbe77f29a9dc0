/**
 * Time-ordered UUIDs (version 7, RFC 9562). Ids are made by the application rather than the
 * database so that a batch of rows and the rows that point at them can be written together, and
 * time order keeps index inserts local.
 */
import { randomBytes } from 'node:crypto';

let lastMs = 0;
let counter = 0;

/** A new UUIDv7; ids made in the same millisecond still sort in creation order. */
export function uuidv7(now: number = Date.now()): string {
  if (now <= lastMs) {
    counter = (counter + 1) & 0xfff;
    if (counter === 0) lastMs += 1;
    now = lastMs;
  } else {
    lastMs = now;
    counter = randomBytes(2).readUInt16BE(0) & 0x7ff;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
