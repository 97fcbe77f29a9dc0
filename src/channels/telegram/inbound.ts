/**
 * A Telegram message as an {@link InboundMessage}: text as it is; media described as what it is
 * (`[photo] caption`, `[voice 0:07]`, `[sticker 😀]`, `[document report.pdf]`) with its metadata
 * in `attachments`. Nothing is downloaded here (media/ reads photos, documents and voice notes and
 * replaces the text with what it read). A message with nothing to say (a service message such
 * as "X joined the group") gives null and is ignored.
 */
import type { Message } from 'grammy/types';
import type { Attachment, InboundMessage } from '../../agent/inbound-message';
import { forwardedFromOf } from './message-origin';
import { displayName, TELEGRAM_CHANNEL, type TelegramScope } from './telegram-scope';

/** `m:ss` (or `h:mm:ss`) for a duration in seconds. */
function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** Drops undefined fields, so stored metadata has no `"name": undefined` noise. */
function attachment(fields: Attachment): Attachment {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as unknown as Attachment;
}

/** The attachment of a message and the words that stand for it in the text, if it has one. */
export function describeAttachment(message: Message): { attachment: Attachment; label: string } | null {
  if (message.photo && message.photo.length > 0) {
    const largest = message.photo[message.photo.length - 1]!;
    return { attachment: attachment({ kind: 'photo', mime: 'image/jpeg', size: largest.file_size }), label: '[photo]' };
  }
  if (message.voice) {
    const v = message.voice;
    return {
      attachment: attachment({ kind: 'voice', mime: v.mime_type, size: v.file_size, durationSeconds: v.duration }),
      label: `[voice ${duration(v.duration)}]`,
    };
  }
  if (message.audio) {
    const a = message.audio;
    const name = a.title ? [a.performer, a.title].filter(Boolean).join(' – ') : a.file_name;
    return {
      attachment: attachment({ kind: 'audio', name, mime: a.mime_type, size: a.file_size, durationSeconds: a.duration }),
      label: name ? `[audio ${name}]` : '[audio]',
    };
  }
  if (message.video_note) {
    const v = message.video_note;
    return { attachment: attachment({ kind: 'video_note', size: v.file_size, durationSeconds: v.duration }), label: `[video message ${duration(v.duration)}]` };
  }
  if (message.animation) {
    const a = message.animation;
    return { attachment: attachment({ kind: 'animation', name: a.file_name, mime: a.mime_type, size: a.file_size }), label: '[animation]' };
  }
  if (message.video) {
    const v = message.video;
    return {
      attachment: attachment({ kind: 'video', name: v.file_name, mime: v.mime_type, size: v.file_size, durationSeconds: v.duration }),
      label: `[video ${duration(v.duration)}]`,
    };
  }
  if (message.sticker) {
    const s = message.sticker;
    return { attachment: attachment({ kind: 'sticker', name: s.emoji, size: s.file_size }), label: s.emoji ? `[sticker ${s.emoji}]` : '[sticker]' };
  }
  if (message.document) {
    const d = message.document;
    return {
      attachment: attachment({ kind: 'document', name: d.file_name, mime: d.mime_type, size: d.file_size }),
      label: d.file_name ? `[document ${d.file_name}]` : '[document]',
    };
  }
  if (message.location) {
    const { latitude, longitude } = message.location;
    return { attachment: attachment({ kind: 'location' }), label: `[location ${latitude.toFixed(5)}, ${longitude.toFixed(5)}]` };
  }
  if (message.contact) {
    const name = [message.contact.first_name, message.contact.last_name].filter(Boolean).join(' ');
    return { attachment: attachment({ kind: 'contact', name }), label: `[contact ${name}]` };
  }
  if (message.poll) return { attachment: attachment({ kind: 'other', name: 'poll' }), label: `[poll ${message.poll.question}]` };
  if (message.dice) return { attachment: attachment({ kind: 'other', name: 'dice' }), label: `[dice ${message.dice.emoji} ${message.dice.value}]` };
  return null;
}

/** The external id of a message: chat and message id (message ids are unique per chat only). */
export function messageExternalId(chatId: number, messageId: number): string {
  return `${chatId}:${messageId}`;
}

/** The message in the channel-neutral shape, or null when it carries nothing to answer. */
/**
 * When a message was sent, to the millisecond as far as it can be known: Telegram's `date` is
 * whole seconds (the send time rounded down), while the agent's replies carry milliseconds. The
 * moment the bot takes the message in refines it within its second (it cannot have been sent
 * later than that, nor outside Telegram's second), so a question and the answer before it stay in
 * the order they arrived when both fall in one second; a message taken in later than its second
 * (a backlog after a restart) gets the last millisecond of that second.
 */
export function messageTime(date: number, receivedAt: Date): Date {
  const second = date * 1000;
  return new Date(Math.min(Math.max(receivedAt.getTime(), second), second + 999));
}

/** `receivedAt`: when the bot took the message in (default: now). */
export function toInboundMessage(message: Message, scope: TelegramScope, receivedAt: Date = new Date()): InboundMessage | null {
  const from = message.from;
  if (!from) return null;
  const media = describeAttachment(message);
  const words = (message.text ?? message.caption ?? '').trim();
  const text = media ? [media.label, words].filter((part) => part !== '').join(' ') : words;
  if (text === '') return null;
  const reply = message.reply_to_message;
  const forwardedFrom = forwardedFromOf(message);
  return {
    channel: TELEGRAM_CHANNEL,
    scopeKey: scope.key,
    scopeKind: scope.kind,
    authorId: String(from.id),
    authorName: displayName(from),
    text,
    timestamp: messageTime(message.date, receivedAt),
    externalId: messageExternalId(message.chat.id, message.message_id),
    ...(reply ? { replyTo: messageExternalId(reply.chat.id, reply.message_id) } : {}),
    ...((reply?.text ?? reply?.caption) ? { replyToText: reply?.text ?? reply?.caption } : {}),
    ...(forwardedFrom ? { forwardedFrom } : {}),
    attachments: media ? [media.attachment] : [],
  };
}
