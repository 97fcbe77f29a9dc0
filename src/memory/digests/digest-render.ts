/**
 * The digest as the person reads it: a title with the period in their zone, one section per kind
 * of change with its numbered items, and the lines that tell what could not be listed.
 */
import { plural } from '../../shared/plural';
import { type DigestAction, type DigestItem, SECTIONS } from './digest-items';

const HEADINGS: Record<DigestAction, string> = {
  create: 'New',
  update: 'Updated',
  contradict: 'Contradicted',
  deactivate: 'Faded',
  conflict: 'Which is true?',
};

/**
 * One formatter per zone: constructing an `Intl.DateTimeFormat` costs ~100 times a format with it
 * (the reply context writes a time on every turn it shows, dozens per reply). Zones are few, but
 * a zone name comes from the person, so the cache is emptied past {@link MAX_CACHED_ZONES}.
 */
const minuteFormats = new Map<string, Intl.DateTimeFormat>();
const MAX_CACHED_ZONES = 64;
/** Years whose ISO form is the same four digits Intl writes. */
const MIN_ISO_YEAR = 1000;
const MAX_ISO_YEAR = 9999;

function minuteFormat(timeZone: string): Intl.DateTimeFormat {
  let format = minuteFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    if (minuteFormats.size >= MAX_CACHED_ZONES) minuteFormats.clear();
    minuteFormats.set(timeZone, format);
  }
  return format;
}

/** `YYYY-MM-DD HH:MM` in `timeZone` (UTC when the zone is unknown or invalid). */
export function formatLocalMinute(date: Date, timeZone: string | null): string {
  // UTC, the default zone, reads straight off the ISO form (four-digit years, as Intl writes them).
  const year = date.getUTCFullYear();
  if ((timeZone === null || timeZone === 'UTC') && year >= MIN_ISO_YEAR && year <= MAX_ISO_YEAR) {
    const iso = date.toISOString();
    return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
  }
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = minuteFormat(timeZone ?? 'UTC').formatToParts(date);
  } catch {
    parts = minuteFormat('UTC').formatToParts(date);
  }
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
}

/** The readable digest: a title with the period, one section per kind of change, the numbered items. */
export function renderDigest(params: {
  periodStart: Date;
  periodEnd: Date;
  timeZone: string | null;
  items: readonly DigestItem[];
  reinforced: number;
  deferred?: number;
  unlearned?: number;
  forgotten?: number;
}): string {
  const { items } = params;
  const deferred = params.deferred ?? 0;
  const unlearned = params.unlearned ?? 0;
  const forgotten = params.forgotten ?? 0;
  if (items.length === 0 && deferred === 0 && unlearned === 0 && forgotten === 0) return '';
  const zone = params.timeZone ?? 'UTC';
  const lines = [
    `# What I learned (${formatLocalMinute(params.periodStart, params.timeZone)} – ${formatLocalMinute(params.periodEnd, params.timeZone)}, ${zone})`,
    '',
  ];
  lines.push(...renderChangeSections(items, params.reinforced));
  // Forgotten memories are counted, never described: their text is gone on purpose.
  if (forgotten > 0)
    lines.push(
      `Forgotten at your request: ${plural(forgotten, 'memory', 'memories')} (what ${forgotten === 1 ? 'it' : 'they'} said is gone, so it is not repeated here).`,
      '',
    );
  if (deferred > 0)
    lines.push(
      `I put off sorting through our conversations ${deferred === 1 ? 'once' : `${deferred} times`} because today's thinking budget was spent; I'll catch up tomorrow.`,
      '',
    );
  if (unlearned > 0)
    lines.push(
      `${plural(unlearned, 'message')} could not be learned from: my model gave no usable answer about ${unlearned === 1 ? 'it' : 'them'} after several tries.`,
      '',
    );
  const question = items.find((i) => i.action === 'conflict');
  if (question) lines.push(`To tell me which is true, answer /keep and its number (e.g. /keep ${question.n}); I set the other aside.`, '');
  if (items.length > 0) lines.push(`To make me forget an item, answer /forget and its number (e.g. /forget ${items[0]!.n}).`, '');
  return lines.join('\n');
}

/**
 * The digest's body: one section per kind of change (New, Updated, Contradicted, Faded) and the
 * questions (Which is true?) with their numbered items, then how many reminders of known things there were. Markdown lines, each
 * section followed by a blank line; shared by the digest and the summary of a sleep run.
 */
export function renderChangeSections(items: readonly DigestItem[], reinforced: number): string[] {
  const lines: string[] = [];
  for (const action of SECTIONS) {
    const section = items.filter((i) => i.action === action);
    if (section.length === 0) continue;
    lines.push(`## ${HEADINGS[action]}`, '', ...section.map((i) => `${i.n}. ${i.text}`), '');
  }
  if (reinforced > 0) lines.push(`I was also reminded ${plural(reinforced, 'time')} of things I already knew.`, '');
  return lines;
}
