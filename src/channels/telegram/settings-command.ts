/**
 * `/settings` on Telegram (src/channels/commands/settings.ts): anyone in the chat may see the
 * settings; in a private chat the person changes them, in a group only its administrators
 * (creator or administrator, asked of Telegram with getChatMember at each change, so a member
 * promoted or demoted a minute ago is judged as they are now).
 */
import type { Composer } from 'grammy';
import { answerSettings, parseSettingsArgument, SETTINGS_NOT_ADMIN_TEXT, type SettingsServices } from '../commands/settings';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';

/** The member statuses Telegram gives a group's administrators. */
const GROUP_ADMIN_STATUSES = new Set(['creator', 'administrator']);

/** Registers `/settings`. */
export function registerSettingsCommand(composer: Composer<NocturneContext>, deps: { scopeControls: SettingsServices }): void {
  composer.command('settings', async (ctx) => {
    const request = parseSettingsArgument(ctx.match);
    if (request.kind === 'change' && ctx.chat.type !== 'private') {
      const member = ctx.from ? await ctx.getChatMember(ctx.from.id) : undefined;
      if (!member || !GROUP_ADMIN_STATUSES.has(member.status)) {
        await sendText(ctx.api, ctx.chat.id, SETTINGS_NOT_ADMIN_TEXT);
        return;
      }
    }
    const where = ctx.chat.type === 'private' ? WHERE : `a Telegram group by user ${ctx.from?.id ?? 'unknown'}`;
    await sendText(ctx.api, ctx.chat.id, await answerSettings(deps.scopeControls, ctx.scope, request, where));
  });
}
