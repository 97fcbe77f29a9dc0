/**
 * The size limits of a message, in one place for every door: a channel's turn and the CLI's
 * JSONL lines (`normalize.ts`), and the episodes of a scope export imported by the CLI
 * (`import-scope`) or the admin API (`export/import-validation.ts`, `export/stream-validation.ts`).
 * A door that measured on its own would sooner or later let through what another refuses; an
 * export with one 200 MiB episode once reached the store this way and the embedder with it.
 *
 * Nothing here reads the configuration: the limit (EPISODE_MAX_BYTES) is handed in by whoever
 * holds the config, and the messages name the setting so an operator knows what to change.
 */

/** What a door needs to know to measure a message. */
export interface EpisodeLimits {
  /** Largest content accepted, in UTF-8 bytes (EPISODE_MAX_BYTES). */
  readonly maxEpisodeBytes: number;
}

/** Largest metadata of a message, as JSON text in UTF-8 bytes: it is free-form, so it gets a cap of its own. */
export const MAX_METADATA_BYTES = 64 * 1024;

/** Room past the content for a message's other fields and metadata, as written in JSON. */
const ENVELOPE_BYTES = 1024 * 1024;
/**
 * How much larger than its content a message's JSON may be: `\uXXXX` writes a 2-byte character
 * in 6 bytes (3 per byte), and the rest of the message comes on top.
 */
const ESCAPE_FACTOR = 4;

/**
 * The most bytes of JSON one message (a JSONL line, an export's row) can take and still be
 * valid: content of EPISODE_MAX_BYTES written with escapes, plus its metadata and other fields.
 * A reader may stop keeping anything longer as soon as it passes this, without reading it whole.
 */
export function maxEncodedEpisodeBytes(limits: EpisodeLimits): number {
  return ESCAPE_FACTOR * limits.maxEpisodeBytes + ENVELOPE_BYTES;
}

/** How {@link maxEncodedEpisodeBytes} is computed, for messages that name it. */
export const ENCODED_LIMIT_RULE = `${ESCAPE_FACTOR} x EPISODE_MAX_BYTES + 1 MiB`;

/** `4.0 MiB`, `12.5 KiB`, `10 bytes`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

/**
 * Why content of `bytes` UTF-8 bytes cannot be stored (`is 200.0 MiB; the limit is 4.0 MiB
 * (EPISODE_MAX_BYTES)`, to follow the field's name), or null when it can.
 */
export function contentSizeProblem(bytes: number, limits: EpisodeLimits): string | null {
  if (bytes <= limits.maxEpisodeBytes) return null;
  return `is ${formatBytes(bytes)}; the limit is ${formatBytes(limits.maxEpisodeBytes)} (EPISODE_MAX_BYTES)`;
}

/**
 * Why `metadata` (a JSON value, nested no deeper than allowed: this walks it) cannot be stored,
 * or null when it can.
 */
export function metadataSizeProblem(metadata: unknown): string | null {
  if (metadata === null || metadata === undefined) return null;
  return Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES ? `is larger than ${formatBytes(MAX_METADATA_BYTES)}` : null;
}
