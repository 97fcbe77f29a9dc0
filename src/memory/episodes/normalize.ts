/**
 * Turns one raw message (from a channel, the CLI importer or the API) into an episode ready to
 * store, or explains exactly why it cannot be stored. Nothing here touches the database.
 *
 * Normalization: Unicode NFC; lone surrogates replaced by U+FFFD; NUL and other control
 * characters removed (newlines and tabs kept, CRLF folded to LF); surrounding whitespace
 * trimmed. The same for every other text of the message: channel, author, ids, and every key and
 * string inside the metadata. Empty content and content over the size cap are refused, and so are
 * metadata nested more than 64 levels deep and numeric external ids; with `checkTime` (imports),
 * timestamps more than 5 minutes ahead of the clock or before 1970 (docs/reliability.md,
 * "Hostile input, round two").
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../../shared/errors';
import { MAX_JSON_DEPTH, pathDeeperThan } from '../../shared/json-depth';
import type { NewEpisode } from '../../storage/episode-repository';
import { contentSizeProblem, metadataSizeProblem } from './episode-limits';
import { estimateImportance } from './importance';

/** The shape accepted from outside (JSONL lines, webhook bodies). */
export const episodeInputSchema = z.object({
  scope: z.string().nullish(),
  channel: z.string().trim().min(1).max(64).optional(),
  role: z.enum(['user', 'agent', 'assistant', 'system']).optional(),
  author: z.string().max(256).nullish(),
  /** Who said it, as the channel names them; the agent passes it in the metadata (`authorId`) too. */
  authorId: z
    .union([z.string().max(256), z.number().int()])
    .transform(String)
    .nullish(),
  content: z.string({ error: 'content is required and must be a string' }),
  timestamp: z
    .union([z.iso.datetime({ offset: true, local: true }), z.iso.date()], { error: 'timestamp must be an ISO 8601 date-time, e.g. 2024-05-08T13:56:00Z' })
    .optional(),
  // A string only: a number would be confused with the string of its digits (12345 and "12345"
  // named one message), and JSON numbers past 2^53 lose digits, so two ids would become one.
  externalId: z
    .string({
      error: (issue) => {
        if (issue.code !== 'invalid_type') return undefined;
        return typeof issue.input === 'number'
          ? `externalId must be a string (write ${JSON.stringify(String(issue.input))}): a number would be confused with the string of the same digits`
          : 'externalId must be a string';
      },
    })
    .min(1)
    .max(512)
    .optional(),
  conversationId: z.string().min(1).max(256).nullish(),
  metadata: z
    .object({
      taskType: z.string().max(64).optional(),
      toolsUsed: z.array(z.string().max(128)).max(100).optional(),
      emotionalTone: z.string().max(64).optional(),
      topics: z.array(z.string().max(128)).max(100).optional(),
      entities: z.array(z.string().max(256)).max(200).optional(),
      importance: z.number().min(0).max(1).optional(),
    })
    .loose()
    .optional(),
});

/** How far ahead of this machine's clock a message's time may be (clocks differ a little). */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;
/** The earliest time a message may have: nothing chat-like is older, and decay arithmetic assumes it. */
export const EARLIEST_TIMESTAMP = new Date('1970-01-01T00:00:00Z');

/**
 * Why a message's time cannot be stored, or null when it can. A time in the future would hold the
 * scope's lastMessageAt ahead of the clock (the scope never idle, never consolidated again); a
 * time before 1970 is a mistake, not history. `given` is the text as written, for the message.
 */
export function timestampProblem(timestamp: Date, now: Date, given: string = timestamp.toISOString()): string | null {
  if (Number.isNaN(timestamp.getTime())) return `timestamp ${given} is not a valid date`;
  if (timestamp.getTime() > now.getTime() + MAX_FUTURE_SKEW_MS) {
    return `timestamp ${given} is in the future (more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead of this machine's clock, ${now.toISOString()})`;
  }
  if (timestamp.getTime() < EARLIEST_TIMESTAMP.getTime()) return `timestamp ${given} is before 1970-01-01, the earliest time a message may have`;
  return null;
}

export interface NormalizeOptions {
  /** Largest content accepted, in UTF-8 bytes (EPISODE_MAX_BYTES). */
  readonly maxBytes: number;
  /** Channel when the input names none. */
  readonly defaultChannel: string;
  /** Time when the input gives none, and the clock future timestamps are measured against. */
  readonly now?: Date;
  /**
   * Refuse a timestamp more than {@link MAX_FUTURE_SKEW_MS} ahead of `now` or before 1970 (see
   * {@link timestampProblem}): for times an outsider states (import lines). Callers that pass a
   * platform's or their own clock's time (the agent, simulations) leave it off; whatever the
   * time, the scope's lastMessageAt never moves past the clock (episode-service).
   */
  readonly checkTime?: boolean;
}

/** Cleans message text: NFC, well-formed, no control characters but newline and tab, trimmed. */
export function normalizeText(text: string): string {
  return (
    text
      .toWellFormed()
      .normalize('NFC')
      .replace(/\r\n?/g, '\n')
      // C0 controls except \t and \n, DEL, C1 controls, and the zero-width no-break space (BOM).
      .replace(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F\uFEFF]/g, '')
      .trim()
  );
}

/**
 * Characters that show nothing on their own: whitespace and separators, controls, format
 * characters (zero-width space and joiners, word joiner, soft hyphen, bidirectional marks), the
 * Hangul fillers, the blank Braille pattern, variation selectors and the combining grapheme joiner.
 */
const INVISIBLE = /[\s\p{Z}\p{Cc}\p{Cf}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u2800\u3164\uFE00-\uFE0F\uFFA0\u{E0100}-\u{E01EF}]/gu;

/**
 * Whether `text` holds nothing a reader could see: made only of whitespace, control, format
 * (zero-width) and other invisible characters. Such a message would be stored, searched and
 * consolidated as if it said something, so every door refuses it as empty. The text itself is
 * stored as written when it is not blank: a zero-width joiner inside an emoji or a word is kept.
 */
export function isBlankText(text: string): boolean {
  return text.replace(INVISIBLE, '').length === 0;
}

/** Why a message's content is empty, as every door says it. */
export const EMPTY_CONTENT_PROBLEM = 'content is empty (nothing but spaces, control or invisible characters such as zero-width spaces)';

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : 'message';
      return issue.message.startsWith(where) ? issue.message : `${where}: ${issue.message}`;
    })
    .join('; ');
}

/**
 * Every string (keys too) of a JSON document cleaned like message text. The metadata is stored
 * as JSON: a NUL or a lone surrogate in it would be kept by SQLite and refused by PostgreSQL's
 * jsonb (failing the whole batch), and control characters would reach prompts and exports.
 */
function normalizeJson(value: unknown): unknown {
  if (typeof value === 'string') return normalizeText(value);
  if (Array.isArray(value)) return value.map(normalizeJson);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, inner]) => [normalizeText(key), normalizeJson(inner)]));
  }
  return value;
}

/** Topic or entity tags as stored: cleaned like message text, lower-cased, each once (EpisodeTag.value). */
export function tagValues(values: readonly string[] | undefined): string[] {
  return [...new Set((values ?? []).map((value) => normalizeText(value).toLowerCase()).filter((value) => value.length > 0))];
}

/** Validates and normalizes one message; throws {@link ValidationError} saying what is wrong. */
/**
 * The speaker's id: given as `authorId`, else the `authorId` the channels put in the metadata (a
 * string or a number), cleaned like any text; null when neither names anyone.
 */
function speakerIdOf(given: string | null | undefined, metadata: Record<string, unknown> | null): string | null {
  const inMetadata = metadata?.authorId;
  const raw = given ?? (typeof inMetadata === 'string' || typeof inMetadata === 'number' ? String(inMetadata) : null);
  return raw === null ? null : normalizeText(raw).slice(0, MAX_SPEAKER_ID_CHARS) || null;
}

/** Longest speaker id kept (a channel's user id is far shorter). */
const MAX_SPEAKER_ID_CHARS = 256;

export function normalizeEpisode(input: unknown, options: NormalizeOptions): NewEpisode {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ValidationError('an episode must be a JSON object with at least "content"', { code: 'episode.not_object' });
  }
  // Before anything walks it: the metadata is the only free-form JSON of a message, and the walks
  // below (and later redaction and export) recurse; 3,000 levels would overflow the stack.
  const metadataInput = (input as { metadata?: unknown }).metadata;
  if (pathDeeperThan(metadataInput, MAX_JSON_DEPTH) !== null) {
    throw new ValidationError(`metadata is nested more than ${MAX_JSON_DEPTH} levels deep`, { code: 'episode.too_deep' });
  }
  const parsed = episodeInputSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(describeIssues(parsed.error), { code: 'episode.invalid' });
  const raw = parsed.data;

  // Measure before cleaning too: a 10 MB message must be refused, not scanned character by character.
  const limits = { maxEpisodeBytes: options.maxBytes };
  const rawBytes = Buffer.byteLength(raw.content, 'utf8');
  if (rawBytes > options.maxBytes * 2) {
    throw new ValidationError(`content ${contentSizeProblem(rawBytes, limits)}`, { code: 'episode.too_large' });
  }
  const content = normalizeText(raw.content);
  if (isBlankText(content)) throw new ValidationError(EMPTY_CONTENT_PROBLEM, { code: 'episode.empty' });
  const tooLarge = contentSizeProblem(Buffer.byteLength(content, 'utf8'), limits);
  if (tooLarge) throw new ValidationError(`content ${tooLarge}`, { code: 'episode.too_large' });

  const now = options.now ?? new Date();
  const timestamp = raw.timestamp === undefined ? now : new Date(raw.timestamp);
  if (Number.isNaN(timestamp.getTime())) {
    throw new ValidationError('timestamp is not a valid date', { code: 'episode.invalid' });
  }
  if (raw.timestamp !== undefined && options.checkTime) {
    const problem = timestampProblem(timestamp, now, raw.timestamp);
    if (problem) throw new ValidationError(problem, { code: 'episode.bad_timestamp' });
  }
  const role = raw.role === 'assistant' ? 'agent' : (raw.role ?? 'user');
  // (Cleaning the JSON text instead would miss them: JSON.stringify writes them as \u escapes.)
  const metadata = raw.metadata ? (normalizeJson(raw.metadata) as Record<string, unknown>) : null;
  const metadataProblem = metadataSizeProblem(metadata);
  if (metadataProblem) throw new ValidationError(`metadata ${metadataProblem}`, { code: 'episode.invalid' });
  const channel = raw.channel === undefined ? options.defaultChannel : normalizeText(raw.channel);
  if (channel.length === 0)
    throw new ValidationError('channel is empty (after removing control characters and surrounding spaces)', { code: 'episode.invalid' });
  const author = raw.author ? normalizeText(raw.author) || null : null;
  const authorId = speakerIdOf(raw.authorId, metadata);
  const externalId = raw.externalId === undefined ? null : normalizeText(raw.externalId) || null;
  const conversationId = raw.conversationId ? normalizeText(raw.conversationId) || null : null;
  return {
    channel,
    role,
    author,
    authorId,
    content,
    timestamp,
    conversationId,
    externalId,
    metadata,
    importance: raw.metadata?.importance ?? estimateImportance(content, role),
    contentHash: createHash('sha256').update(content).digest('hex'),
    topics: tagValues(raw.metadata?.topics),
    entities: tagValues(raw.metadata?.entities),
  };
}
