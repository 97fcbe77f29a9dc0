/**
 * Who is looking at the memory page, and which scope they may see: decided here for both doors.
 *
 * - Inside Telegram (a Mini App), the init data is checked on every request (telegram-init-data.ts)
 *   and its user is the identity `telegram:private:<id>`, resolved like a message from their
 *   private chat (identity-links.ts: the owner's identities and linked chats share one scope).
 *   Only people the bot serves (TELEGRAM_ALLOWED_USERS) are let in, as in the chats.
 *   A direct Mini App link opened from a group names it in `start_param` as `g<chat id>`: the user
 *   must be a member of that group now (asked of Telegram through {@link GroupMembership}; a member
 *   who left is refused), and the page then shows that group's scope only. The group's
 *   administrators reach all of it; another member reaches the memories about them, as `/memories`
 *   in the group does (memories/speakers.ts).
 * - In a browser, the session cookie a single-use link opened (web-sessions.ts) names the scope.
 *
 * Anything else is refused; a refusal never says whose data exists.
 */
import type { Scope } from '../../storage/prisma';
import type { IdentityScopes } from '../scopes/identity-links';
import type { ScopeDirectory } from '../scopes/scope-directory';
import { validateInitData, type InitDataUser } from './telegram-init-data';
import type { WebSessions } from './web-sessions';

/** A user's standing in a Telegram group, as Telegram says it now. */
export type GroupStanding = 'admin' | 'member' | 'none';

/** The port to Telegram's `getChatMember` (the Telegram channel implements it). */
export interface GroupMembership {
  standing(groupChatId: number, userId: number): Promise<GroupStanding>;
}

/** The person looking and what they may see. */
export interface WebViewer {
  readonly scope: Scope;
  readonly kind: 'private' | 'group';
  readonly personName: string;
  readonly via: 'telegram' | 'browser';
  /** What a change must carry in `X-CSRF-Token` (browser sessions); null inside Telegram. */
  readonly csrf: string | null;
  /**
   * In a group, a member who is not an administrator reaches the memories about them only (their
   * Telegram id, as episodes record speakers); undefined: the whole scope.
   */
  readonly speakerId?: string;
}

/** Why the page refused a request: no or bad credentials (401), or not one of the group (403). */
export interface WebRefusal {
  readonly refused: 'unauthorized' | 'forbidden';
  readonly reason: string;
}

export interface WebAccess {
  /** The viewer of a Mini App request (its `X-Telegram-Init-Data`). */
  fromInitData(raw: string, now: Date): Promise<WebViewer | WebRefusal>;
  /** The viewer of a browser request (its `nocturne_session` cookie). */
  fromSession(cookie: string, now: Date): Promise<WebViewer | WebRefusal>;
}

/** `start_param` naming a group: `g` and its (negative) chat id. */
const GROUP_START = /^g(-\d{1,20})$/;

export function isRefusal(value: WebViewer | WebRefusal): value is WebRefusal {
  return 'refused' in value;
}

const nameOf = (user: InitDataUser) => [user.firstName, user.lastName].filter(Boolean).join(' ') || user.username || String(user.id);

export function createWebAccess(deps: {
  identities: Pick<IdentityScopes, 'resolve'>;
  directory: Pick<ScopeDirectory, 'findById' | 'findByKey'>;
  sessions: Pick<WebSessions, 'verify'>;
  /** The bot's token (init data is signed with it); no Mini App door without it. */
  botToken?: string;
  maxAgeSeconds: number;
  /** Who the bot serves (TELEGRAM_ALLOWED_USERS): anyone else opening the Mini App is refused, and no scope is made for them. */
  allowedUsers: readonly number[];
  membership?: GroupMembership;
}): WebAccess {
  const allowed = new Set(deps.allowedUsers);
  const unauthorized = (reason: string): WebRefusal => ({ refused: 'unauthorized', reason });

  return {
    async fromInitData(raw, now) {
      if (!deps.botToken) return unauthorized('this service runs no Telegram bot');
      const data = validateInitData(raw, { botToken: deps.botToken, maxAgeSeconds: deps.maxAgeSeconds, now });
      if (!data.ok) return unauthorized(data.reason === 'expired' ? 'the Telegram data is too old: open the page again' : 'the Telegram data is not valid');
      if (!allowed.has(data.user.id)) return { refused: 'forbidden', reason: 'this bot does not serve you (ask its operator to add your Telegram user id)' };
      const personName = nameOf(data.user);
      const group = data.startParam && GROUP_START.exec(data.startParam);
      if (data.startParam && !group) return unauthorized('the page was opened with an unknown start parameter');
      if (group) {
        const chatId = Number(group[1]);
        const scope = Number.isSafeInteger(chatId) ? await deps.directory.findByKey(`telegram:group:${chatId}`) : null;
        const forbidden: WebRefusal = { refused: 'forbidden', reason: 'only the members of this group see its memory' };
        if (!scope || !deps.membership) return forbidden;
        const standing = await deps.membership.standing(chatId, data.user.id).catch(() => 'none' as const);
        if (standing === 'none') return forbidden;
        return { scope, kind: 'group', personName, via: 'telegram', csrf: null, ...(standing === 'member' && { speakerId: String(data.user.id) }) };
      }
      const scope = await deps.identities.resolve({
        key: `telegram:private:${data.user.id}`,
        channel: 'telegram',
        kind: 'private',
        ownerId: String(data.user.id),
        title: personName,
      });
      return { scope, kind: 'private', personName, via: 'telegram', csrf: null };
    },

    async fromSession(cookie, now) {
      const session = await deps.sessions.verify(cookie, now);
      const scope = session && (await deps.directory.findById(session.scopeId));
      if (!session || !scope) return unauthorized('no session: ask the bot for a new link with /web');
      const kind = scope.kind === 'group' ? 'group' : 'private';
      const personName = session.identityKey === scope.key && scope.title ? scope.title : (session.identityKey.split(':').pop() ?? session.identityKey);
      return { scope, kind, personName, via: 'browser', csrf: session.csrf };
    },
  };
}
