/**
 * When a reminder is due, from what the model (or a person) wrote: a local date and time in the
 * scope's own zone ("2026-11-27 09:00", "2026-11-27T09:00:30"), since people say "Friday at 9" in
 * their own time, or an instant with an explicit offset ("…Z", "…+01:00"). Anything else is a
 * clear error, never a guess.
 */
import { ValidationError } from '../../shared/errors';
import { instantOf } from '../../shared/local-time';

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** The instant `when` names: a local wall-clock time in `timeZone`, or an instant with its own offset. */
export function parseReminderTime(when: string, timeZone: string): Date {
  const text = when.trim();
  if (WITH_OFFSET.test(text)) {
    const instant = new Date(text.replace(' ', 'T'));
    if (!Number.isNaN(instant.getTime())) return instant;
  }
  const match = LOCAL.exec(text);
  if (!match) {
    throw new ValidationError(`"${when.slice(0, 40)}" is not a time: write the local date and time as YYYY-MM-DD HH:MM`, {
      code: 'reminder.time_format',
    });
  }
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) {
    throw new ValidationError(`"${when.slice(0, 40)}" is not a valid date and time`, { code: 'reminder.time_invalid' });
  }
  // 31 February and the like would roll over to March: refuse them rather than remind on the wrong day.
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) {
    throw new ValidationError(`"${when.slice(0, 40)}" is not a date on the calendar`, { code: 'reminder.time_invalid' });
  }
  const instant = instantOf({ year, month, day, hour, minute, second }, timeZone);
  return instant;
}

/** An instant as the person reads it: "Fri 27 Nov 2026, 09:00" in their zone. */
export function localReminderTime(instant: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(instant);
}
