/**
 * `/reminders` on every chat channel: the scope's reminders still to come, numbered, soonest
 * first, in the person's zone; `/reminders cancel N` cancels number N of the list they saw last
 * (the list is read again when none was shown in this process, e.g. after a restart).
 */
import type { ReminderBook, ReminderView } from '../../memory/reminders/reminder-book';
import { localReminderTime } from '../../memory/reminders/reminder-time';
import type { CommandScope } from './command-scope';

export const REMINDERS_USAGE = 'Use /reminders to see your reminders, /reminders cancel 2 to cancel number 2.';
export const NO_REMINDERS_TEXT = 'No reminders to come. Ask me ("remind me on Friday at 9 to call the dentist") and I will set one.';
/** When a channel was started without a reminder book (a test, a tool). */
export const REMINDERS_UNAVAILABLE_TEXT = 'Reminders are not available here.';

/** How long the numbers of a shown list stay valid; after that a cancel reads the list afresh. */
const LISTING_TTL_MS = 60 * 60_000;

export interface ReminderCommands {
  /** The answer to `/reminders <argument>` in `scope`. */
  answer(scope: CommandScope, argument: string): Promise<string>;
}

/** The command's logic with its memory of the last list shown per scope. */
export function createReminderCommands(reminders: Pick<ReminderBook, 'upcoming' | 'cancel'> | undefined): ReminderCommands {
  const listings = new Map<string, { ids: string[]; shownAt: number }>();

  const line = (n: number, r: ReminderView, zone: string) => `${n}. ${localReminderTime(r.dueAt, zone)} — ${r.text}`;

  async function list(book: Pick<ReminderBook, 'upcoming'>, scope: CommandScope): Promise<string> {
    const upcoming = await book.upcoming(scope.id);
    listings.set(scope.id, { ids: upcoming.map((r) => r.id), shownAt: Date.now() });
    if (upcoming.length === 0) return NO_REMINDERS_TEXT;
    return [`Your reminders (${scope.timeZone}):`, ...upcoming.map((r, i) => line(i + 1, r, scope.timeZone)), '', 'To cancel one: /reminders cancel N'].join(
      '\n',
    );
  }

  async function cancel(book: Pick<ReminderBook, 'upcoming' | 'cancel'>, scope: CommandScope, n: number): Promise<string> {
    const shown = listings.get(scope.id);
    const ids = shown && Date.now() - shown.shownAt < LISTING_TTL_MS ? shown.ids : (await book.upcoming(scope.id)).map((r) => r.id);
    const id = ids[n - 1];
    if (!id) return `There is no reminder ${n}. /reminders lists them.`;
    const cancelled = await book.cancel(scope.id, id);
    if (!cancelled) return `Reminder ${n} is no longer waiting (already sent or cancelled). /reminders lists the ones to come.`;
    return `Cancelled: ${localReminderTime(cancelled.dueAt, scope.timeZone)} — ${cancelled.text}`;
  }

  return {
    async answer(scope, argument) {
      if (!reminders) return REMINDERS_UNAVAILABLE_TEXT;
      const words = argument.trim().split(/\s+/).filter(Boolean);
      if (words.length === 0 || (words.length === 1 && words[0] === 'list')) return list(reminders, scope);
      const number = words[0] === 'cancel' && words.length === 2 ? words[1]! : undefined;
      if (number === undefined || !/^\d{1,4}$/.test(number) || Number(number) < 1) return REMINDERS_USAGE;
      return cancel(reminders, scope, Number(number));
    },
  };
}
