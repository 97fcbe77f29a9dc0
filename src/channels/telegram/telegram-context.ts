/**
 * What every Telegram handler works with: the grammY context with the chat's scope attached by
 * the access gate. Each command's registration receives the services it uses by name.
 */
import type { Context } from 'grammy';
import type { ScopeKind } from '../../agent/inbound-message';
import type { CommandScope } from '../commands/command-scope';
import type { GroupReplies } from '../../memory/scopes/group-replies';

/** The scope of the chat an update came from; set by the access gate before any handler runs. */
export interface ChatScope extends CommandScope {
  readonly kind: ScopeKind;
  /** In a group: when the bot answers (the group's setting, default `mentions`). */
  readonly groupReplies: GroupReplies;
}

export interface ScopeFlavor {
  scope: ChatScope;
}

/** The context type of the bot: grammY's context plus the chat's scope. */
export type NocturneContext = Context & ScopeFlavor;
