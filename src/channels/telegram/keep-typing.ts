/**
 * A long piece of work started by a command (a `/sleep` of a scope with many messages can take
 * half a minute) shows the person it is under way: Telegram shows "typing…" for about five
 * seconds after each `sendChatAction`, so the action is sent again every {@link TYPING_REFRESH_MS}
 * until the work ends, and a work still running after {@link STATUS_AFTER_MS} gets one short
 * message saying what is happening, so the chat is not silent while the answer is prepared.
 */
import type { Api } from 'grammy';
import { sendText } from './send-text';

/** Under Telegram's ~5 s display of a chat action, so "typing…" never lapses. */
export const TYPING_REFRESH_MS = 4_000;
/** Work longer than this gets a status message. */
export const STATUS_AFTER_MS = 3_000;

/**
 * Runs `work` with the chat showing "typing…" throughout, and `status` sent once when it takes
 * longer than {@link STATUS_AFTER_MS}. Failures to show either are ignored (they only inform).
 */
export async function withTypingKeptAlive<T>(
  api: Api,
  chatId: number,
  status: string,
  work: () => Promise<T>,
  timing: { refreshMs?: number; statusAfterMs?: number } = {},
): Promise<T> {
  const type = () => api.sendChatAction(chatId, 'typing').catch(() => undefined);
  void type();
  const refresh = setInterval(() => void type(), timing.refreshMs ?? TYPING_REFRESH_MS);
  let statusSent: Promise<unknown> | undefined;
  const statusTimer = setTimeout(() => {
    statusSent = sendText(api, chatId, status).catch(() => undefined);
  }, timing.statusAfterMs ?? STATUS_AFTER_MS);
  try {
    return await work();
  } finally {
    clearInterval(refresh);
    clearTimeout(statusTimer);
    // The answer that follows comes after the status, never before it.
    await statusSent;
  }
}
