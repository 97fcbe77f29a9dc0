/**
 * Sending text the one way the bot does it: plain text (no parse_mode, so nothing a person or the
 * model writes can break the formatting or be read as markup), split at Telegram's 4,096-character
 * limit on paragraph and line boundaries, parts sent in order. A keyboard goes on the last part.
 */
import type { Api } from 'grammy';
import type { InlineKeyboardMarkup, Message } from 'grammy/types';
import { splitText, TELEGRAM_TEXT_LIMIT } from '../split-text';

export interface SendTextOptions {
  readonly replyMarkup?: InlineKeyboardMarkup;
  /** The message the first part answers (shown as a quote in groups). */
  readonly replyToMessageId?: number;
}

/** Sends `text` as one or more plain messages; returns them in order (none for empty text). */
export async function sendText(api: Api, chatId: number | string, text: string, options: SendTextOptions = {}): Promise<Message.TextMessage[]> {
  const parts = splitText(text, TELEGRAM_TEXT_LIMIT);
  const sent: Message.TextMessage[] = [];
  for (const [i, part] of parts.entries()) {
    const last = i === parts.length - 1;
    sent.push(
      await api.sendMessage(chatId, part, {
        link_preview_options: { is_disabled: true },
        ...(i === 0 && options.replyToMessageId !== undefined
          ? { reply_parameters: { message_id: options.replyToMessageId, allow_sending_without_reply: true } }
          : {}),
        ...(last && options.replyMarkup ? { reply_markup: options.replyMarkup } : {}),
      }),
    );
  }
  return sent;
}
