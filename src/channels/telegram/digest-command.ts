/**
 * `/digest` on Telegram: the digest now (src/channels/commands/digest.ts), delivered to this chat
 * through the same claim-send-mark path as the nightly sender, so it is never sent twice.
 */
import type { Composer } from 'grammy';
import type { Logger } from '../../shared/logger';
import type { DeliverableDigest, DigestBook } from '../../memory/digests/digest-book';
import { deliverDigestNow, NOTHING_NEW_TEXT } from '../commands/digest';
import { answerTimeZone, changeDigestSchedule, parseDigestArgument, type ScheduleServices } from '../commands/digest-schedule';
import type { DeliveryBook } from '../digest-delivery';
import { deliverDigest } from './digest-delivery';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';

/** Registers `/digest` (now, `at HH:MM`, `on`, `off`) and `/timezone`. */
export function registerDigestCommand(
  composer: Composer<NocturneContext>,
  deps: { digestBook: DeliveryBook & Pick<DigestBook, 'undelivered' | 'build'>; digestSchedule: ScheduleServices; logger: Logger },
): void {
  const { digestBook, digestSchedule } = deps;
  const log = deps.logger.child({ component: 'telegram-digests' });

  composer.command('digest', async (ctx) => {
    const request = parseDigestArgument(ctx.match);
    if (request.kind !== 'now') {
      await sendText(ctx.api, ctx.chat.id, await changeDigestSchedule(digestSchedule, ctx.scope, request, WHERE));
      return;
    }
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    const toThisChat = (digest: DeliverableDigest) => deliverDigest({ digestBook, api: ctx.api, digest, chatId: ctx.chat.id, logger: log });
    const sent = await deliverDigestNow(digestBook, ctx.scope.id, toThisChat);
    if (sent === 0) await sendText(ctx.api, ctx.chat.id, NOTHING_NEW_TEXT);
  });

  composer.command('timezone', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await answerTimeZone(digestSchedule, ctx.scope, ctx.match, WHERE));
  });
}
