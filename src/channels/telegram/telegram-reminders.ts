/**
 * Reminders asked for in a Telegram chat go back to that chat: a private chat's scope is keyed by
 * the person's user id (which is the chat id), a group's by the group's chat id (telegram-scope.ts).
 */
import type { Api } from 'grammy';
import type { Logger } from '../../shared/logger';
import { createReminderSender, type ReminderDeliveryBook, type ReminderSender } from '../reminder-sender';
import { sendText } from './send-text';
import { TELEGRAM_CHANNEL } from './telegram-scope';

const SCOPE_CHAT = /^telegram:(?:private|group):(-?\d+)$/;

/** The chat a Telegram scope's messages go to; undefined for a key that names none. */
export function telegramChatOf(scopeKey: string): number | undefined {
  const match = SCOPE_CHAT.exec(scopeKey);
  return match ? Number(match[1]) : undefined;
}

/** A reminder sender for the Telegram channel, sending through `api`. */
export function createTelegramReminderSender(options: {
  reminders: ReminderDeliveryBook;
  api: Api;
  logger: Logger;
  intervalMs: number;
  lateAfterMs: number;
  clock?: () => Date;
}): ReminderSender {
  const { api, ...rest } = options;
  return createReminderSender({
    ...rest,
    channel: TELEGRAM_CHANNEL,
    async send(reminder, text) {
      const chatId = telegramChatOf(reminder.scopeKey);
      if (chatId === undefined) throw new Error(`the scope ${reminder.scopeKey} names no Telegram chat`);
      await sendText(api, chatId, text);
    },
  });
}
