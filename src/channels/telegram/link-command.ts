/**
 * `/link` and `/unlink` on Telegram (the logic and wording: src/channels/commands/link.ts). The
 * identity is the chat's own (telegram-scope.ts), not the scope the access gate resolved it to:
 * a code is bound to the chat that asked for it. A group is refused by the domain (a group chat
 * is many people, and linking joins one person's own chats).
 */
import type { Composer } from 'grammy';
import { answerLink, answerUnlink, type LinkServices } from '../commands/link';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';
import { TELEGRAM_CHANNEL, telegramScope } from './telegram-scope';

/** Registers `/link [CODE]` and `/unlink`. */
export function registerLinkCommands(composer: Composer<NocturneContext>, deps: { link?: LinkServices }): void {
  const identityOf = (ctx: NocturneContext) => {
    const own = ctx.chat && telegramScope(ctx.chat, ctx.from);
    return own ? { key: own.key, channel: TELEGRAM_CHANNEL, kind: own.kind, title: own.title, ownerId: own.ownerId } : undefined;
  };
  composer.command('link', async (ctx) => {
    const identity = identityOf(ctx);
    if (identity) await sendText(ctx.api, ctx.chat.id, await answerLink(deps.link, identity, ctx.match));
  });
  composer.command('unlink', async (ctx) => {
    const identity = identityOf(ctx);
    if (identity) await sendText(ctx.api, ctx.chat.id, await answerUnlink(deps.link, identity));
  });
}
