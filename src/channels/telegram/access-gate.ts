/**
 * Who may talk to the bot, checked before anything else runs (nothing of a refused update is
 * stored, and no scope is created for it):
 * - only people on the allowlist (TELEGRAM_ALLOWED_USERS); anyone else gets one polite refusal,
 *   once per person (remembered in memory, so a restart may refuse someone once more), and is
 *   then ignored; in a group only when they address the bot (a mention, a reply to it, a
 *   command): talk among the group's members is no reason to speak;
 * - private chats always; groups only when TELEGRAM_GROUPS is on (otherwise one note per group);
 * - other bots and channels are ignored.
 * For an allowed update the gate resolves the chat's scope (creating it on first use, with its
 * owner for a private chat, so the nightly digest knows where to go) and puts it on `ctx.scope`.
 */
import type { MiddlewareFn } from 'grammy';
import type { Message } from 'grammy/types';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import { groupRepliesOf } from '../../memory/scopes/group-replies';
import type { Logger } from '../../shared/logger';
import type { NocturneContext } from './telegram-context';
import { TELEGRAM_CHANNEL, telegramScope } from './telegram-scope';
import { scopeTimeZone } from '../../memory/scopes/scope-policy';
import { addressedToBot } from './conversation';

/** A group message meant for the bot: it mentions the bot, replies to it, or is a command. */
function speaksToBot(message: Message, me: { id: number; username: string }): boolean {
  const command = (message.entities ?? []).some((e) => e.type === 'bot_command' && e.offset === 0);
  return command || addressedToBot(message, me);
}

export interface AccessGateOptions {
  readonly allowedUsers: readonly number[];
  /** Whether group chats are served (TELEGRAM_GROUPS). */
  readonly groups: boolean;
  /** Finds or creates the chat's scope and records its owner. */
  readonly directory: Pick<ScopeDirectory, 'ensure' | 'setOwner'>;
  /** Zone of scopes without one. */
  readonly defaultTimeZone: string;
  readonly logger: Logger;
  /** How many refused people and groups are remembered (the oldest are forgotten first). */
  readonly maxRemembered?: number;
}

/** What a stranger is told, once. Their id is in it so the owner can add them if they want. */
export function refusalText(userId: number): string {
  return (
    'Hello! I am a private assistant and can only talk with the people my owner has allowed, so I will not answer or remember anything you send. ' +
    `If you know my owner, they can add your Telegram user id (${userId}) to my allowlist.`
  );
}

/** Said once in a group while TELEGRAM_GROUPS is off. */
export const GROUPS_OFF_TEXT = 'Hello! I only talk in private chats (my owner has not enabled groups), so I will stay quiet here.';

/** A set that forgets its oldest members beyond `max`. */
function boundedSet(max: number) {
  const members = new Set<string>();
  return {
    /** Adds `key`; true when it was not there yet. */
    add(key: string): boolean {
      if (members.has(key)) return false;
      members.add(key);
      if (members.size > max) members.delete(members.values().next().value!);
      return true;
    },
  };
}

/** The gate middleware; nothing after it runs for a refused update. */
export function createAccessGate(options: AccessGateOptions): MiddlewareFn<NocturneContext> {
  const log = options.logger.child({ component: 'telegram-access' });
  const allowed = new Set(options.allowedUsers);
  const refused = boundedSet(options.maxRemembered ?? 10_000);

  /** Tells the person (once) why nothing happens; a failure to tell them is only logged. */
  async function refuseOnce(ctx: NocturneContext, key: string, text: string, details: Record<string, unknown>): Promise<void> {
    const first = refused.add(key);
    if (first) log.info('refused an update', details);
    try {
      if (ctx.callbackQuery) await ctx.answerCallbackQuery(first ? { text: text.slice(0, 200), show_alert: true } : undefined);
      else if (first && ctx.chat) await ctx.api.sendMessage(ctx.chat.id, text);
    } catch (error) {
      log.warn('could not send a refusal', { ...details, error });
    }
  }

  return async (ctx, next) => {
    const chat = ctx.chat;
    const from = ctx.from;
    if (!chat || !from || from.is_bot) return;
    const scope = telegramScope(chat, from);
    if (!scope) return;
    if (scope.kind === 'group' && !options.groups) {
      await refuseOnce(ctx, `chat:${chat.id}`, GROUPS_OFF_TEXT, { reason: 'groups are off', chatId: chat.id });
      return;
    }
    if (!allowed.has(from.id)) {
      // In a group, people talk among themselves: someone not on the allowlist is told why the
      // bot does not answer only when they speak to it, never for a message meant for others.
      if (scope.kind === 'group' && !ctx.callbackQuery && !(ctx.message && speaksToBot(ctx.message, ctx.me))) return;
      await refuseOnce(ctx, `user:${from.id}`, refusalText(from.id), { reason: 'not on the allowlist', userId: from.id });
      return;
    }
    let row = await options.directory.ensure({ key: scope.key, channel: TELEGRAM_CHANNEL, kind: scope.kind, title: scope.title, ownerId: scope.ownerId });
    if (scope.ownerId && !row.ownerId) {
      // Created elsewhere (an import, the agent) before the bot saw it: the digest needs its owner.
      row = await options.directory.setOwner(row.id, scope.ownerId);
    }
    ctx.scope = { id: row.id, key: row.key, kind: scope.kind, timeZone: scopeTimeZone(row, options.defaultTimeZone), groupReplies: groupRepliesOf(row) };
    await next();
  };
}
