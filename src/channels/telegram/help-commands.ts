/**
 * The command list (registered with setMyCommands, so Telegram shows it in the menu), `/start`
 * and `/help`; the list and its descriptions are every channel's (src/channels/commands/help.ts).
 */
import type { Composer } from 'grammy';
import type { BotCommand } from 'grammy/types';
import { COMMANDS, helpText, NUMBERS_NOTE } from '../commands/help';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

/** Every command, in menu order, with the description Telegram shows (3-256 characters). */
export const BOT_COMMANDS: readonly BotCommand[] = COMMANDS;

const FOOTER = `${NUMBERS_NOTE} Photos, voice messages, stickers and files are fine: I note what they are (I do not look inside them).`;

/** The `/help` answer in a private chat, built from {@link BOT_COMMANDS} so the two never disagree. */
export const HELP_TEXT = helpText({
  about: 'Each evening I send you a digest of what I learned (you choose when: /digest at 21:30, /timezone; or /digest off).',
  footer: FOOTER,
});

/**
 * The `/help` answer in a group: a group has no owner, so no evening digest is sent to it, and
 * the text does not promise one.
 */
export const GROUP_HELP_TEXT = helpText({
  about: 'Send /digest to see what I learned in this group (evening digests go to private chats only).',
  footer: FOOTER,
});

/** Registers `/start` and `/help`. */
export function registerHelpCommands(composer: Composer<NocturneContext>): void {
  composer.command('start', async (ctx) => {
    const name = ctx.from?.first_name ? `, ${ctx.from.first_name}` : '';
    const where =
      ctx.scope.kind === 'group'
        ? 'This group has its own memory: what is said here stays here and never shows up in private chats. I answer when someone mentions me, replies to one of my messages or sends a command (a group admin can make me answer everything: /replies all).'
        : 'What you tell me here stays in this chat.';
    await sendText(ctx.api, ctx.chat.id, `Hello${name}! ${where}\n\n${ctx.scope.kind === 'group' ? GROUP_HELP_TEXT : HELP_TEXT}`);
  });
  composer.command('help', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, ctx.scope.kind === 'group' ? GROUP_HELP_TEXT : HELP_TEXT);
  });
}
