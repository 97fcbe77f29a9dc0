/**
 * Relative dates made absolute. "I have a dentist appointment tomorrow" means one day when it is
 * said and another when the memory is read a month later, so a memory learned from it states the
 * date: the expression is resolved against the local day of the message it came from, in the
 * scope's time zone, and rewritten as `on 2026-03-06`.
 *
 * Deliberately small and predictable: common English expressions only (today, tonight, tomorrow,
 * yesterday, the day after tomorrow, this/next/last/on <weekday>, in N days/weeks/months/years,
 * in a fortnight, N days/weeks ago). "next Friday" is the first Friday after the day it was said
 * (as "on Friday" and "this Friday" are, counting the day itself for "this"); vaguer phrases
 * ("next week", "soon") are left as they are.
 */

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
const NUMBERS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
};
const DAY_MS = 86_400_000;

/** The calendar day `at` falls on in `timeZone` (UTC when the zone is unknown), as a UTC midnight. */
export function localDay(at: Date, timeZone: string | null | undefined): Date {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-CA', { timeZone: timeZone ?? 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  } catch {
    parts = new Intl.DateTimeFormat('en-CA', { timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  }
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return new Date(Date.UTC(get('year'), get('month') - 1, get('day')));
}

function iso(day: Date): string {
  return day.toISOString().slice(0, 10);
}

function addDays(day: Date, n: number): Date {
  return new Date(day.getTime() + n * DAY_MS);
}

function addMonths(day: Date, n: number): Date {
  const out = new Date(day);
  out.setUTCMonth(out.getUTCMonth() + n);
  return out;
}

function count(word: string): number {
  return NUMBERS[word.toLowerCase()] ?? Number(word);
}

const NUMBER = `(\\d{1,3}|${Object.keys(NUMBERS).join('|')})`;
const WEEKDAY = `(${WEEKDAYS.join('|')})`;

/** Rules in order: longer phrases first, so "the day after tomorrow" is not read as "tomorrow". */
const RULES: ReadonlyArray<{ readonly pattern: RegExp; readonly day: (m: RegExpExecArray, today: Date) => Date }> = [
  { pattern: /\b(?:on )?the day after tomorrow\b/i, day: (_m, t) => addDays(t, 2) },
  { pattern: /\b(?:on )?the day before yesterday\b/i, day: (_m, t) => addDays(t, -2) },
  { pattern: /\btomorrow\b/i, day: (_m, t) => addDays(t, 1) },
  { pattern: /\byesterday\b/i, day: (_m, t) => addDays(t, -1) },
  { pattern: /\b(?:today|tonight|this evening|this morning)\b/i, day: (_m, t) => t },
  { pattern: /\bin a fortnight\b/i, day: (_m, t) => addDays(t, 14) },
  {
    pattern: new RegExp(`\\bin ${NUMBER} (day|week|month|year)s?\\b`, 'i'),
    day: (m, t) => {
      const n = count(m[1]!);
      const unit = m[2]!.toLowerCase();
      return unit === 'day' ? addDays(t, n) : unit === 'week' ? addDays(t, 7 * n) : addMonths(t, unit === 'month' ? n : 12 * n);
    },
  },
  {
    pattern: new RegExp(`\\b${NUMBER} (day|week)s? ago\\b`, 'i'),
    day: (m, t) => addDays(t, -count(m[1]!) * (m[2]!.toLowerCase() === 'week' ? 7 : 1)),
  },
  {
    pattern: new RegExp(`\\b(?:on )?(next|this|last|on) ${WEEKDAY}\\b`, 'i'),
    day: (m, t) => {
      const target = WEEKDAYS.indexOf(m[2]!.toLowerCase() as (typeof WEEKDAYS)[number]);
      const ahead = (target - t.getUTCDay() + 7) % 7;
      const which = m[1]!.toLowerCase();
      if (which === 'last') return addDays(t, -((t.getUTCDay() - target + 7) % 7 || 7));
      if (which === 'this') return addDays(t, ahead);
      return addDays(t, ahead || 7);
    },
  },
];

/**
 * `text` with its relative dates written as absolute ones (`on YYYY-MM-DD`), resolved against
 * the local day of `at` in `timeZone`. Text without such an expression comes back unchanged.
 */
export function resolveRelativeDates(text: string, params: { readonly at: Date; readonly timeZone?: string | null }): string {
  const today = localDay(params.at, params.timeZone);
  let out = text;
  for (const rule of RULES) {
    const global = new RegExp(rule.pattern.source, 'gi');
    out = out.replace(global, (...args) => {
      const match = args.slice(0, -2) as unknown as RegExpExecArray;
      return `on ${iso(rule.day(match, today))}`;
    });
  }
  return out.replace(/\bon on\b/gi, 'on');
}

/**
 * The latest absolute date (`YYYY-MM-DD`) a text states, as a UTC midnight (an event "from
 * 2026-03-01 to 2026-03-10" is over after the 10th); undefined when it states none.
 */
export function latestStatedDate(text: string): Date | undefined {
  let latest: Date | undefined;
  for (const m of text.matchAll(/\b(\d{4})-(\d{2})-(\d{2})\b/g)) {
    const day = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    if (!Number.isNaN(day.getTime()) && (!latest || day > latest)) latest = day;
  }
  return latest;
}
