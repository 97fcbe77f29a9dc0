/**
 * What every Telegram handler works with: the grammY context with the chat's scope attached by
 * the access gate, and the narrow slice of the core the commands use (so a test, or another
 * composition, can hand in just that).
 */
import type { Context } from 'grammy';
import type { Logger } from '../../shared/logger';
import type { ConversationHandler } from '../conversation-handler';
import type { ScopeKind } from '../inbound-message';
import type { CommandCore, CommandScope } from '../commands/command-scope';
import type { NumberedLists } from '../commands/numbered-lists';

/** The services the bot needs from the core. */
export type TelegramCore = CommandCore;

/** The scope of the chat an update came from; set by the access gate before any handler runs. */
export interface ChatScope extends CommandScope {
  readonly kind: ScopeKind;
}

export interface ScopeFlavor {
  scope: ChatScope;
}

/** The context type of the bot: grammY's context plus the chat's scope. */
export type NocturneContext = Context & ScopeFlavor;

/** What the command handlers share. */
export interface CommandDeps {
  readonly core: TelegramCore;
  readonly handler: ConversationHandler;
  readonly logger: Logger;
  readonly lists: NumberedLists;
}
