/**
 * The absolute dates a query names, and how close an item's time is to them: the `time` part of
 * the hybrid score.
 *
 * Why: a question about a dated event is best answered by what was said around that date, which
 * neither BM25 (digits and month names match little) nor the embedding sees.
 */

/** An item three days from a date the query names counts half as close as one on that date. */
const TIME_HALF_LIFE_DAYS = 3;
const DAY_MS = 86_400_000;

/** A calendar interval named in a query, [start, end) in UTC. */
export interface DateInterval {
  readonly start: Date;
  readonly end: Date;
}

const MONTH =
  '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|' + 'oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const MONTH_PREFIXES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const monthOf = (name: string) => MONTH_PREFIXES.indexOf(name.slice(0, 3).toLowerCase());

/** A date read from a query: a year, maybe a month (0-11, -1 for none that exists), maybe a day. */
interface NamedDate {
  year: number;
  month?: number;
  day?: number;
}

/** Most specific first: a span taken by one pattern is not read again by a later one. */
const DATE_PATTERNS: ReadonlyArray<{ pattern: RegExp; read: (m: RegExpExecArray) => NamedDate }> = [
  {
    pattern: new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH},?\\s+(\\d{4})\\b`, 'gi'),
    read: (m) => ({ year: Number(m[3]), month: monthOf(m[2]!), day: Number(m[1]) }),
  },
  {
    pattern: new RegExp(`\\b${MONTH}\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s*(\\d{4})\\b`, 'gi'),
    read: (m) => ({ year: Number(m[3]), month: monthOf(m[1]!), day: Number(m[2]) }),
  },
  {
    pattern: new RegExp(`\\b${MONTH},?\\s+(\\d{4})\\b`, 'gi'),
    read: (m) => ({ year: Number(m[2]), month: monthOf(m[1]!) }),
  },
  { pattern: /\b(?:in|of|during|by)\s+(\d{4})\b/gi, read: (m) => ({ year: Number(m[1]) }) },
];

/**
 * The absolute dates a query names ("on 8 May, 2023", "July 10, 2022", "in August 2023",
 * "in 2024") as calendar intervals. Relative dates ("last week") are left alone: they need the
 * asker's "now".
 */
export function datesInQuery(text: string): DateInterval[] {
  const out: DateInterval[] = [];
  const taken: Array<[number, number]> = [];
  for (const { pattern, read } of DATE_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const from = m.index ?? 0;
      const to = from + m[0].length;
      if (taken.some(([a, b]) => a < to && from < b)) continue;
      taken.push([from, to]);
      const { year, month, day } = read(m as RegExpExecArray);
      // An impossible date ("31 February") names no day; its month is not read from it either.
      if (month !== undefined && month < 0) continue;
      if (day !== undefined && (day < 1 || day > new Date(Date.UTC(year, month! + 1, 0)).getUTCDate())) continue;
      const start = new Date(Date.UTC(year, month ?? 0, day ?? 1));
      out.push({ start, end: endOf({ year, month, day }) });
    }
  }
  return out;
}

/** The first instant after the named day, month or year. */
function endOf({ year, month, day }: NamedDate): Date {
  if (day !== undefined) return new Date(Date.UTC(year, month!, day + 1));
  if (month !== undefined) return new Date(Date.UTC(year, month + 1, 1));
  return new Date(Date.UTC(year + 1, 0, 1));
}

/** 1 inside one of the intervals, halving every {@link TIME_HALF_LIFE_DAYS} days outside. */
export function closenessTo(intervals: readonly DateInterval[], time: Date): number {
  let best = 0;
  for (const { start, end } of intervals) {
    const days = Math.max(0, start.getTime() - time.getTime(), time.getTime() - end.getTime()) / DAY_MS;
    best = Math.max(best, 0.5 ** (days / TIME_HALF_LIFE_DAYS));
  }
  return best;
}
