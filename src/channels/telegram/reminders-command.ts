/** `/reminders` on Telegram: list, and `/reminders cancel N` (the logic: src/channels/commands/reminders.ts). */
import type { Composer } from 'grammy';
import type { ReminderBook } from '../../memory/reminders/reminder-book';
import { createReminderCommands } from '../commands/reminders';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

/** Registers `/reminders`. */
export function registerRemindersCommand(composer: Composer<NocturneContext>, deps: { reminders?: Pick<ReminderBook, 'upcoming' | 'cancel'> }): void {
  const commands = createReminderCommands(deps.reminders);
  composer.command('reminders', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await commands.answer(ctx.scope, ctx.match));
  });
}
