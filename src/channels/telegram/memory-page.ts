/**
 * The memory page on Telegram (docs/channels.md, "The memory page"):
 *
 * - `/memory` answers a button that opens the page as a Mini App: in a private chat a `web_app`
 *   button to `<PUBLIC_URL>/app` (Telegram allows those there only, and only to https pages); in a
 *   group a URL button to the Mini App's direct link `t.me/<bot>/<short name>?startapp=g<chat id>`
 *   (TELEGRAM_WEBAPP_SHORT_NAME), which opens the page with the group named, or a note on how to
 *   set that up.
 * - `/web` answers a single-use browser link (commands/web.ts); the identity is the chat's own.
 * - The chat menu button opens the page when PUBLIC_URL is https (set at start).
 * - Whether a viewer of a group's page belongs to the group is asked of Telegram
 *   (`getChatMember`) at each request, since members come and go outside the bot.
 */
import type { Api, Composer } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { GroupMembership, GroupStanding } from '../../memory/web/web-access';
import type { Logger } from '../../shared/logger';
import { answerWeb, WEB_UNAVAILABLE_TEXT, type WebLinkServices } from '../commands/web';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';
import { telegramScope } from './telegram-scope';

/** What `/memory`, `/web` and the menu button need. */
export interface TelegramMemoryPage extends WebLinkServices {
  /** PUBLIC_URL is https: Telegram opens Mini Apps from https pages only. */
  readonly https: boolean;
  /** The Mini App's short name at @BotFather (`/newapp`), for groups' direct links. */
  readonly webAppShortName?: string;
}

/** The label of the buttons that open the page. */
const OPEN_LABEL = 'Open my memory';
const ADMIN_STATUSES = new Set(['creator', 'administrator']);

/** The page's address as a Mini App opens it. */
const pageUrl = (page: TelegramMemoryPage) => `${page.publicUrl}/app`;

/** The answer to `/memory`: its text and the button, if the chat can have one. */
export function memoryPageAnswer(
  page: TelegramMemoryPage | undefined,
  chat: { id: number; group: boolean },
  botUsername: string,
): { text: string; markup?: InlineKeyboardMarkup } {
  if (!page) return { text: WEB_UNAVAILABLE_TEXT };
  if (!chat.group) {
    if (!page.https)
      return {
        text: 'Telegram opens the memory page only from an https address, and this service has none set (PUBLIC_URL). Send /web for a link to open it in a browser.',
      };
    return {
      text: 'What I remember about you, by category, with where each memory came from; you can correct, pin or forget any of it.',
      markup: { inline_keyboard: [[{ text: OPEN_LABEL, web_app: { url: pageUrl(page) } }]] },
    };
  }
  if (!page.https || !page.webAppShortName)
    return {
      text: 'This group’s memory page needs a Mini App registered with @BotFather (/newapp, pointing at the https PUBLIC_URL /app) and its short name in TELEGRAM_WEBAPP_SHORT_NAME; the operator can set both (docs/channels.md, "The memory page").',
    };
  const link = `https://t.me/${botUsername}/${page.webAppShortName}?startapp=g${chat.id}`;
  return {
    text: 'What I remember from this group. Members see what is about them; the group’s administrators see all of it.',
    markup: { inline_keyboard: [[{ text: 'Open the group’s memory', url: link }]] },
  };
}

/** Registers `/memory` and `/web`. */
export function registerMemoryPageCommands(composer: Composer<NocturneContext>, deps: { page?: TelegramMemoryPage }): void {
  composer.command('memory', async (ctx) => {
    const answer = memoryPageAnswer(deps.page, { id: ctx.chat.id, group: ctx.scope.kind === 'group' }, ctx.me.username);
    await sendText(ctx.api, ctx.chat.id, answer.text, answer.markup ? { replyMarkup: answer.markup } : {});
  });
  composer.command('web', async (ctx) => {
    const own = telegramScope(ctx.chat, ctx.from);
    const text = await answerWeb(
      deps.page,
      { scopeId: ctx.scope.id, identityKey: own?.key ?? ctx.scope.key, group: ctx.scope.kind === 'group' },
      'asked for with /web on Telegram',
    );
    await sendText(ctx.api, ctx.chat.id, text);
  });
}

/**
 * Sets the bot's menu button (beside the message field in every private chat) to open the page, when
 * it can be a Mini App (https). A refusal is logged, not fatal: `/memory` still works.
 */
export async function setMemoryMenuButton(api: Pick<Api, 'setChatMenuButton'>, page: TelegramMemoryPage | undefined, logger: Logger): Promise<void> {
  if (!page?.https) return;
  try {
    await api.setChatMenuButton({ menu_button: { type: 'web_app', text: 'Memory', web_app: { url: pageUrl(page) } } });
  } catch (error) {
    logger.warn('could not set the chat menu button to the memory page; /memory still opens it', { error });
  }
}

/** A group's members as Telegram says them now: administrators, members, and everyone else (left, kicked). */
export function telegramGroupMembership(api: Pick<Api, 'getChatMember'>): GroupMembership {
  return {
    async standing(groupChatId, userId): Promise<GroupStanding> {
      const member = await api.getChatMember(groupChatId, userId);
      if (ADMIN_STATUSES.has(member.status)) return 'admin';
      if (member.status === 'member' || (member.status === 'restricted' && member.is_member)) return 'member';
      return 'none';
    },
  };
}
