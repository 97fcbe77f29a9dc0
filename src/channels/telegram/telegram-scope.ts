/**
 * Where a Telegram chat's memories live. A private chat is one person's scope, keyed by their
 * user id; a group (or supergroup) is one shared scope, keyed by the chat id. The keys differ by
 * construction, so a group's memories can never be read in a private chat or the other way round.
 * Channels are not conversations with people and have no scope.
 */
import type { Chat, User } from 'grammy/types';
import type { ScopeKind } from '../../agent/inbound-message';

/** The channel name stored on scopes and episodes. */
export const TELEGRAM_CHANNEL = 'telegram';

export interface TelegramScope {
  readonly key: string;
  readonly kind: ScopeKind;
  /** Whose digest it is: the user of a private chat; a group has no single owner. */
  readonly ownerId?: string;
  readonly title: string;
}

/** The display name of a Telegram user: first and last name, else @username, else the id. */
export function displayName(user: Pick<User, 'id' | 'first_name' | 'last_name' | 'username'>): string {
  const name = [user.first_name, user.last_name]
    .filter((part) => part && part.trim() !== '')
    .join(' ')
    .trim();
  return name || (user.username ? `@${user.username}` : String(user.id));
}

/** The scope of a chat, or null for a chat kind Nocturne does not talk in (channels). */
export function telegramScope(chat: Chat, from: User | undefined): TelegramScope | null {
  if (chat.type === 'private') {
    const userId = from?.id ?? chat.id;
    return { key: `telegram:private:${userId}`, kind: 'private', ownerId: String(userId), title: from ? displayName(from) : String(userId) };
  }
  if (chat.type === 'group' || chat.type === 'supergroup') {
    return { key: `telegram:group:${chat.id}`, kind: 'group', title: chat.title };
  }
  return null;
}
