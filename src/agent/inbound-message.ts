/**
 * The one shape every channel (Telegram, the terminal, webhooks) turns an incoming message into,
 * and the agent loop consumes. Channels differ in how a message arrives, never in what the agent
 * is given, so the agent has no channel code and a new channel needs no agent change.
 *
 * A channel decides *who* and *where* (the scope key, the author) and describes what arrived
 * (text and attachment metadata); it never decides what to remember. Attachments arrive as words,
 * never as bytes: Telegram puts a photo in as `[photo] <what the model saw>` (or its caption) in
 * `text` and `{ kind: 'photo', size, fileId }` in `attachments`. A channel that sends attachments without words
 * may leave `text` empty; {@link contentOf} then describes them.
 *
 * Validation happens here, at the boundary, with errors that name the field: a channel bug
 * should read "scopeKey: must not be empty", not a Prisma stack trace three layers down.
 */
import { z } from 'zod';
import { ValidationError } from '../shared/errors';
import type { ScopeDescriptor } from '../memory/scopes/scope-directory';
import { FORWARDED_FROM, REPLY_TO, REPLY_TO_TEXT, replyQuote } from '../memory/episodes/message-context';

/** What an attachment is; `other` for anything a channel does not name (a poll, a dice). */
export const ATTACHMENT_KINDS = ['photo', 'voice', 'audio', 'video', 'video_note', 'animation', 'sticker', 'document', 'location', 'contact', 'other'] as const;
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

/** Metadata of one attachment; the content itself stays with the channel. */
export interface Attachment {
  readonly kind: AttachmentKind;
  /** File name, sticker emoji or contact name, when the channel has one. */
  readonly name?: string;
  readonly mime?: string;
  /** Size in bytes, when known. */
  readonly size?: number;
  /** Length of a voice, audio or video message, in seconds. */
  readonly durationSeconds?: number;
  /** The channel's id of the file (Telegram's file_id): the bytes are never stored, only this. */
  readonly fileId?: string;
}

/**
 * The isolation unit a message belongs to: one person's chat (`private`), a group, a terminal
 * user (`user`) or a webhook source without users (`source`).
 */
export const SCOPE_KINDS = ['private', 'group', 'user', 'source'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

export interface InboundMessage {
  /** The channel's name: `telegram`, `terminal`, `webhook`, ... */
  readonly channel: string;
  /**
   * Where the message's memories live, e.g. `telegram:private:42` or `telegram:group:-100123`.
   * Two scopes never share memories, so this key is the privacy boundary.
   */
  readonly scopeKey: string;
  readonly scopeKind: ScopeKind;
  /** The author's id on the channel (a Telegram user id as a string), when there is one. */
  readonly authorId?: string;
  /** How to address the author (shown to the model beside group messages). */
  readonly authorName?: string;
  /** The text, or for media a description such as `[photo] caption`; empty only when something is attached. */
  readonly text: string;
  readonly timestamp: Date;
  /** The channel's id of the message, unique within the scope: a redelivery is stored once. */
  readonly externalId?: string;
  /** The external id of the message this one answers, when it is a reply. */
  readonly replyTo?: string;
  /** The text (or caption) of the message answered, when the channel has it. */
  readonly replyToText?: string;
  /**
   * Who wrote a forwarded message first (a person's or a chat's name): the text is theirs, not
   * the author's statement about themselves.
   */
  readonly forwardedFrom?: string;
  readonly attachments?: readonly Attachment[];
}

const nonEmpty = (field: string, max: number) =>
  z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(max, `${field} is at most ${max} characters`);

const TIMESTAMP_PROBLEM = 'timestamp must be a Date or an ISO 8601 date-time, e.g. 2026-01-05T10:00:00Z';
const externalIdSchema = z.union([z.string().min(1).max(512), z.number().int()]).transform(String);

const attachmentSchema = z.object({
  kind: z.enum(ATTACHMENT_KINDS, { error: `attachments[].kind must be one of ${ATTACHMENT_KINDS.join(', ')}` }),
  name: z.string().trim().max(512).optional(),
  mime: z.string().trim().max(255).optional(),
  size: z.number().int().min(0).optional(),
  durationSeconds: z.number().min(0).optional(),
  fileId: z.string().trim().max(512).optional(),
});

/** The zod schema of {@link InboundMessage}; `timestamp` accepts a Date or an ISO 8601 string. */
export const inboundMessageSchema = z
  .object({
    channel: nonEmpty('channel', 64),
    scopeKey: nonEmpty('scopeKey', 200).refine((key) => !/[\u0000-\u001F\u007F-\u009F]/.test(key), 'scopeKey must not contain control characters'),
    scopeKind: z.enum(SCOPE_KINDS, { error: `scopeKind must be one of ${SCOPE_KINDS.join(', ')}` }),
    authorId: z.union([z.string(), z.number()]).transform(String).optional(),
    authorName: z.string().trim().max(256).optional(),
    text: z.string({ error: 'text must be a string (empty when only attachments are sent)' }),
    timestamp: z
      .union([z.date(), z.iso.datetime({ offset: true, error: TIMESTAMP_PROBLEM })], { error: TIMESTAMP_PROBLEM })
      .transform((t) => (t instanceof Date ? t : new Date(t))),
    externalId: externalIdSchema.optional(),
    replyTo: externalIdSchema.optional(),
    replyToText: z.string().optional(),
    forwardedFrom: z.string().trim().min(1).max(256).optional(),
    attachments: z.array(attachmentSchema).max(50, 'at most 50 attachments').optional(),
  })
  .superRefine((message, ctx) => {
    if (message.text.trim() === '' && (message.attachments?.length ?? 0) === 0) {
      ctx.addIssue({ code: 'custom', path: ['text'], message: 'text must not be empty unless something is attached' });
    }
    if (Number.isNaN(message.timestamp.getTime())) ctx.addIssue({ code: 'custom', path: ['timestamp'], message: 'timestamp is not a valid date' });
  });

/**
 * Validates what a channel produced; throws a {@link ValidationError} (`agent.invalid_message`)
 * listing every bad field at once.
 */
export function parseInboundMessage(input: unknown): InboundMessage {
  const parsed = inboundMessageSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const where = issue.path.map(String).join('.') || 'message';
    return issue.message.startsWith(where.replace(/\.\d+\./, '[].')) || issue.message.startsWith(where) ? issue.message : `${where}: ${issue.message}`;
  });
  throw new ValidationError(`invalid inbound message: ${problems.join('; ')}`, { code: 'agent.invalid_message', details: { problems } });
}

/** The scope a message belongs to, as the episode service creates it on first use. */
export function scopeOf(message: InboundMessage): ScopeDescriptor {
  return { key: message.scopeKey, channel: message.channel, kind: message.scopeKind };
}

/**
 * What the episode stores as content: the text as the channel wrote it (media already described
 * there), or, when only attachments came, a line describing each.
 */
export function contentOf(message: InboundMessage): string {
  if (message.text.trim() !== '') return message.text;
  return (message.attachments ?? [])
    .map((a) => {
      const details = [a.name, a.mime, a.size === undefined ? undefined : `${a.size} bytes`].filter(Boolean).join(', ');
      return `[${a.kind}${details ? `: ${details}` : ''}]`;
    })
    .join('\n');
}

/**
 * The episode metadata that keeps where a message stands: the message it answers (by id, with a
 * short quote) and who wrote a forwarded message first (memory/episodes/message-context.ts).
 */
export function contextMetadata(message: InboundMessage): Record<string, string> {
  return {
    ...(message.replyTo && { [REPLY_TO]: message.replyTo }),
    ...(message.replyToText?.trim() && { [REPLY_TO_TEXT]: replyQuote(message.replyToText) }),
    ...(message.forwardedFrom && { [FORWARDED_FROM]: message.forwardedFrom }),
  };
}
