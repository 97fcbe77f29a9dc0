/**
 * Telegram's `edited_message`: the person changed a message they sent. Its new text (media
 * described as for any message, inbound.ts) replaces the stored one everywhere it lives, like a
 * forget of the old words (the handler's `edit`, memory/episodes/episode-edits.ts). Nothing is
 * answered: the conversation goes on, and what was learned from the old text is checked again
 * at the next sleep. An edit of a message never stored (a command, a message from before the
 * bot was added) changes nothing; a new text that could not be stored is refused with the reason
 * (the error boundary says it) and the old text stays.
 */
import type { Composer } from 'grammy';
import type { Logger } from '../../shared/logger';
import type { ConversationHandler } from '../conversation-handler';
import { toInboundMessage } from './inbound';
import type { NocturneContext } from './telegram-context';
import { TELEGRAM_CHANNEL, type TelegramScope } from './telegram-scope';

/** Registers the edit handler; before the conversation's catch-all (which only sees `message`). */
export function registerEditedMessages(composer: Composer<NocturneContext>, deps: { readonly handler: ConversationHandler; readonly logger: Logger }): void {
  const log = deps.logger.child({ component: 'telegram' });
  composer.on('edited_message', async (ctx) => {
    const edited = ctx.editedMessage;
    const scope: TelegramScope = { key: ctx.scope.key, kind: ctx.scope.kind, title: '' };
    const editedAt = new Date((edited.edit_date ?? edited.date) * 1000);
    const message = toInboundMessage(edited, scope, editedAt);
    if (!message?.externalId || !deps.handler.edit) return;
    const outcome = await deps.handler.edit({
      scopeKey: message.scopeKey,
      externalId: message.externalId,
      text: message.text,
      editedAt,
      channel: TELEGRAM_CHANNEL,
    });
    log.info('an edited message was handled', { scopeKey: message.scopeKey, externalId: message.externalId, status: outcome.status });
  });
}
