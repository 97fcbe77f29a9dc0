/**
 * `/digest` on Telegram: the digest now (src/channels/commands/digest.ts), delivered to this chat
 * through the same claim-send-mark path as the nightly sender, so it is never sent twice.
 */
import type { Composer } from 'grammy';
import { deliverDigestNow, NOTHING_NEW_TEXT } from '../commands/digest';
import { deliverDigest } from './digest-delivery';
import { sendText } from './send-text';
import type { CommandDeps, NocturneContext } from './telegram-context';

/** Registers `/digest`. */
export function registerDigestCommand(composer: Composer<NocturneContext>, deps: CommandDeps): void {
  const prisma = deps.core.db.prisma;
  const log = deps.logger.child({ component: 'telegram-digests' });

  composer.command('digest', async (ctx) => {
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    const sent = await deliverDigestNow(prisma, ctx.scope.id, (digest) => deliverDigest({ prisma, api: ctx.api, digest, chatId: ctx.chat.id, logger: log }));
    if (sent === 0) await sendText(ctx.api, ctx.chat.id, NOTHING_NEW_TEXT);
  });
}
