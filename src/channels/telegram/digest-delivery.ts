/**
 * Delivering one digest to a Telegram chat, at most once: the channel-neutral claim-send-mark
 * (src/channels/digest-delivery.ts) with the text split at 4,096 characters and sent as plain
 * messages, the buttons answering its "Which is true?" questions under the last one. Both the
 * nightly sender and `/digest` go through {@link deliverDigest}.
 */
import type { Api } from 'grammy';
import type { DeliverableDigest } from '../../memory/digests/digest-book';
import type { Logger } from '../../shared/logger';
import { deliverDigestOnce, type DeliveryBook, type DeliveryOutcome } from '../digest-delivery';
import { splitText, TELEGRAM_TEXT_LIMIT } from '../split-text';
import { digestItems } from '../../memory/digests/digest';
import { conflictKeyboard } from './keep-command';
import { sendText } from './send-text';

export type { DeliveryOutcome } from '../digest-delivery';

/** Sends `digest` to `chatId` unless someone else already claimed it. */
export function deliverDigest(params: {
  api: Api;
  chatId: number | string;
  digestBook: DeliveryBook;
  digest: DeliverableDigest;
  logger: Logger;
  now?: () => Date;
}): Promise<DeliveryOutcome> {
  const { api, chatId, ...rest } = params;
  const keyboard = conflictKeyboard(digestItems(params.digest));
  return deliverDigestOnce({
    ...rest,
    split: (text) => splitText(text, TELEGRAM_TEXT_LIMIT),
    // The "Which is true?" questions get one-tap answers under the last part (keep-command.ts).
    send: async (part, last) => void (await sendText(api, chatId, part, last && keyboard ? { replyMarkup: keyboard } : {})),
  });
}
