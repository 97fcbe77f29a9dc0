/**
 * `/digest` on Telegram: the digest now (src/channels/commands/digest.ts), delivered to this chat
 * through the same claim-send-mark path as the nightly sender, so it is never sent twice.
 */
import type { Composer } from 'grammy';
import type { Logger } from '../../shared/logger';
import type { DeliverableDigest, DigestBook } from '../../memory/digests/digest-book';
import { deliverDigestNow, NOTHING_NEW_TEXT } from '../commands/digest';
import type { DeliveryBook } from '../digest-delivery';
import { deliverDigest } from './digest-delivery';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

/** Registers `/digest`. */
export function registerDigestCommand(
  composer: Composer<NocturneContext>,
  deps: { digestBook: DeliveryBook & Pick<DigestBook, 'undelivered' | 'build'>; logger: Logger },
): void {
  const { digestBook } = deps;
  const log = deps.logger.child({ component: 'telegram-digests' });

  composer.command('digest', async (ctx) => {
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    const toThisChat = (digest: DeliverableDigest) => deliverDigest({ digestBook, api: ctx.api, digest, chatId: ctx.chat.id, logger: log });
    const sent = await deliverDigestNow(digestBook, ctx.scope.id, toThisChat);
    if (sent === 0) await sendText(ctx.api, ctx.chat.id, NOTHING_NEW_TEXT);
  });
}
