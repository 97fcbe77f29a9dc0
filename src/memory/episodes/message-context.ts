/**
 * What a message says about where it stands in the conversation, beyond its own words: the
 * message it answers (a reply, with a short quote of that message) and, for a forwarded
 * message, who wrote it first. Both live in the episode's metadata (`replyTo`, `replyToText`,
 * `forwardedFrom`), so forgetting by words and exports reach them like any metadata, and every
 * prompt shows them the same way: the reply prompt as a prefix of the turn, the consolidation
 * prompt on the line of the episode (a forwarded message is someone else's words, never the
 * person's statement about themselves).
 */

/** Metadata key: the channel's id of the message this one answers. */
export const REPLY_TO = 'replyTo';
/** Metadata key: a short quote of the message answered, as the channel showed it. */
export const REPLY_TO_TEXT = 'replyToText';
/** Metadata key: who wrote a forwarded message first (a person's or a chat's name). */
export const FORWARDED_FROM = 'forwardedFrom';
/** Metadata key: when and how often the person edited the message (no old text is kept). */
export const EDITED = 'edited';

/**
 * Longest quote of an answered message kept with a reply: enough to say what is answered, not a
 * second copy of a long message (the whole message is its own episode, found by `replyTo`).
 */
export const REPLY_QUOTE_CHARS = 200;

/** The context of one message, read from its metadata. */
export interface MessageContext {
  readonly replyTo?: string;
  readonly replyToText?: string;
  readonly forwardedFrom?: string;
}

function field(metadata: unknown, key: string): string | undefined {
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) return undefined;
  const value = (metadata as Record<string, unknown>)[key];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/** The reply and forward context stored in an episode's metadata (fields absent when not stored). */
export function messageContextOf(metadata: unknown): MessageContext {
  const replyTo = field(metadata, REPLY_TO);
  const replyToText = field(metadata, REPLY_TO_TEXT);
  const forwardedFrom = field(metadata, FORWARDED_FROM);
  return { ...(replyTo && { replyTo }), ...(replyToText && { replyToText }), ...(forwardedFrom && { forwardedFrom }) };
}

/** A quote cut to {@link REPLY_QUOTE_CHARS} on one line, marked when cut. */
export function replyQuote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > REPLY_QUOTE_CHARS ? `${flat.slice(0, REPLY_QUOTE_CHARS)}…` : flat;
}

/**
 * The words that stand before a message's text in a prompt: `(forwarded from Bea)` and
 * `(in reply to: "the quote")`, or an empty string. A reply whose quote is unknown says only
 * that it answers an earlier message.
 */
export function contextPrefix(context: MessageContext): string {
  const parts: string[] = [];
  if (context.forwardedFrom) parts.push(`(forwarded from ${context.forwardedFrom})`);
  if (context.replyToText) parts.push(`(in reply to: "${replyQuote(context.replyToText)}")`);
  else if (context.replyTo) parts.push('(in reply to an earlier message)');
  return parts.length > 0 ? `${parts.join(' ')} ` : '';
}

/** A stored turn's text as a prompt shows it: its context first (see {@link contextPrefix}). */
export function withMessageContext(content: string, metadata: unknown): string {
  return `${contextPrefix(messageContextOf(metadata))}${content}`;
}
