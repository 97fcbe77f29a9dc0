/**
 * Wall-clock time in a scope's own time zone: is an instant inside its sleep window, when is its
 * digest due today, when did its day begin.
 *
 * People say "sleep from 23:00 for 8 hours" and "send my digest at 21:00" in their local time, so
 * every rule here is about local wall-clock time, read through Intl.DateTimeFormat (no time zone
 * library). A window is a span of wall-clock time: on the night clocks change it lasts an hour
 * more or less in real time, but it still starts and ends at the hours the person named. A local
 * time that does not exist (skipped by a spring-forward change) maps to the instant right after
 * the gap; one that happens twice (fall back) maps to its first occurrence.
 */

/** A nightly window in local time: starts at `startHour`:00 and lasts `durationHours` (1-24). */
export interface SleepWindow {
  /** 0-23, local hour at which the window opens. */
  readonly startHour: number;
  /** 1-24; a window may wrap midnight (23:00 for 8 h ends at 07:00). 24 means always. */
  readonly durationHours: number;
}

/** A local calendar date and wall-clock time (month 1-12). */
export interface LocalDateTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    // hourCycle h23: midnight is 00, never 24 (some engines print 24 with hour12: false).
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** True when `timeZone` is an IANA zone this runtime knows. */
export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The local date and wall-clock time of an instant in a time zone. */
export function localDateTime(instant: Date, timeZone: string): LocalDateTime {
  const fields: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(instant)) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  return {
    year: fields.year!,
    month: fields.month!,
    day: fields.day!,
    hour: fields.hour! % 24,
    minute: fields.minute!,
    second: fields.second!,
  };
}

function wallClockAsUtc(local: LocalDateTime): number {
  return Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
}

/** The zone's offset from UTC at an instant, in milliseconds (east positive). */
function offsetAt(ms: number, timeZone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallClockAsUtc(localDateTime(new Date(whole), timeZone)) - whole;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The instant at which the zone's clocks show `local`. Offsets a day before and after are the
 * only two candidates (zones change offset at most once in two days); a time both give is
 * ambiguous and the earlier wins, a time neither gives is in a gap and is shifted past it.
 */
export function instantOf(local: Omit<LocalDateTime, 'second'> & { second?: number }, timeZone: string): Date {
  const wanted = wallClockAsUtc({ ...local, second: local.second ?? 0 });
  const before = offsetAt(wanted - DAY_MS, timeZone);
  const after = offsetAt(wanted + DAY_MS, timeZone);
  const candidates = [wanted - before, wanted - after].filter((ms) => ms + offsetAt(ms, timeZone) === wanted).sort((a, b) => a - b);
  // In a gap, reading the time with the offset in force before it lands just after the gap.
  return new Date(candidates[0] ?? wanted - before);
}

/** Whether `instant` falls inside the window, judged by the local wall clock of `timeZone`. */
export function isInSleepWindow(instant: Date, window: SleepWindow, timeZone: string): boolean {
  if (window.durationHours >= 24) return true;
  const local = localDateTime(instant, timeZone);
  const minuteOfDay = local.hour * 60 + local.minute;
  const sinceStart = (minuteOfDay - window.startHour * 60 + 24 * 60) % (24 * 60);
  return sinceStart < window.durationHours * 60;
}

/** Parses `HH:MM` (24-hour); throws on anything else. */
export function parseClockTime(value: string): { hour: number; minute: number } {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  if (!match) throw new RangeError(`"${value}" is not a time of day as HH:MM (24-hour)`);
  return { hour: Number(match[1]), minute: Number(match[2]) };
}

/** The instant of today's local `digestTime` (HH:MM) in `timeZone`, "today" being the local date of `now`. */
export function digestInstant(now: Date, digestTime: string, timeZone: string): Date {
  const { hour, minute } = parseClockTime(digestTime);
  const today = localDateTime(now, timeZone);
  return instantOf({ year: today.year, month: today.month, day: today.day, hour, minute }, timeZone);
}

/** The instant the local day of `now` began (local midnight, or the first instant after a gap). */
export function startOfLocalDay(now: Date, timeZone: string): Date {
  const today = localDateTime(now, timeZone);
  return instantOf({ year: today.year, month: today.month, day: today.day, hour: 0, minute: 0 }, timeZone);
}

/**
 * The instant the window next opens after the opening of the window `instant` is in (or, outside
 * a window, after the last one that opened): tomorrow night's opening, seen from tonight. A rule
 * that may only act inside the window asks this to know whether waiting for the next night is
 * too late. A window of 24 hours or more is always open: its "next opening" is `instant` itself.
 */
export function nextWindowOpening(instant: Date, window: SleepWindow, timeZone: string): Date {
  if (window.durationHours >= 24) return instant;
  const local = localDateTime(instant, timeZone);
  // Date.UTC normalizes day overflow (the 32nd, the 0th), so calendar arithmetic stays in the zone's dates.
  const daysAhead = local.hour >= window.startHour ? 1 : 0;
  const date = new Date(Date.UTC(local.year, local.month - 1, local.day + daysAhead));
  return instantOf({ year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate(), hour: window.startHour, minute: 0 }, timeZone);
}
