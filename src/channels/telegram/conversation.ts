/**
 * Everything that is not a command goes to the conversation handler (the agent), and its answer
 * comes back, split at 4,096 characters. Media arrive as what they are (`[photo] caption`, with
 * their metadata); service messages with nothing to answer are ignored. `/end` closes the
 * conversation; an unknown command gets a pointer to /help rather than a model's guess.
 *
 * In a group the bot answers only what is meant for it — a mention, a reply to one of its
 * messages, a command — unless the group's setting (`/replies all`) says every message; the
 * rest is stored through the handler's `observe` (the group's memory) and not answered.
 */
import type { Composer } from 'grammy';
import type { Message } from 'grammy/types';
import { END_TEXT, HANDLER_FAILED_TEXT, unknownCommandText } from '../commands/replies';
import type { ConversationHandler } from '../conversation-handler';
import { toInboundMessage } from './inbound';
import { sendText } from './send-text';
import type { Logger } from '../../shared/logger';
import type { NocturneContext } from './telegram-context';
import type { TelegramScope } from './telegram-scope';

/**
 * Whether a group message is for the bot: it mentions the bot (`@name`, or a mention of its
 * account without a username), or it replies to one of the bot's messages.
 */
export function addressedToBot(message: Message, me: { id: number; username: string }): boolean {
  if (message.reply_to_message?.from?.id === me.id) return true;
  const text = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  return entities.some(
    (e) =>
      (e.type === 'mention' && text.slice(e.offset, e.offset + e.length).toLowerCase() === `@${me.username.toLowerCase()}`) ||
      (e.type === 'text_mention' && e.user.id === me.id),
  );
}

/** Registers `/end`, the unknown-command answer and the catch-all that talks to the handler; goes last. */
export function registerConversation(composer: Composer<NocturneContext>, deps: { readonly handler: ConversationHandler; readonly logger: Logger }): void {
  const log = deps.logger.child({ component: 'telegram' });

  composer.command('end', async (ctx) => {
    await deps.handler.end(ctx.scope.key);
    await sendText(ctx.api, ctx.chat.id, END_TEXT);
  });

  // Any other /command: not for the model.
  composer.on('message:entities:bot_command', async (ctx, next) => {
    const first = ctx.message.entities.find((e) => e.type === 'bot_command' && e.offset === 0);
    if (!first) return next();
    const command = ctx.message.text.slice(0, first.length);
    const target = command.split('@')[1];
    if (target && target.toLowerCase() !== ctx.me.username.toLowerCase()) return; // for another bot in the group
    await sendText(ctx.api, ctx.chat.id, unknownCommandText(command));
  });

  composer.on('message', async (ctx) => {
    const scope: TelegramScope = { key: ctx.scope.key, kind: ctx.scope.kind, title: '' };
    const message = toInboundMessage(ctx.message, scope);
    if (!message) return;
    if (ctx.chat.type !== 'private' && ctx.scope.groupReplies !== 'all' && !addressedToBot(ctx.message, ctx.me)) {
      // Group talk not meant for the bot: remembered as the group's, not answered.
      await deps.handler.observe?.(message);
      return;
    }
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    let answer: string;
    try {
      answer = await deps.handler.reply(message);
    } catch (error) {
      log.error('the conversation handler failed', { scopeKey: message.scopeKey, externalId: message.externalId, error });
      await sendText(ctx.api, ctx.chat.id, HANDLER_FAILED_TEXT);
      return;
    }
    await sendText(ctx.api, ctx.chat.id, answer, ctx.chat.type === 'private' ? {} : { replyToMessageId: ctx.message.message_id });
  });
}
