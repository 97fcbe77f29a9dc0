/**
 * The digest (seed 000): what the agent learned about its owner in a period, told to them once,
 * with every item numbered so they can answer `/forget N`.
 *
 * A digest is read from the audit trail, not from a model: what was learned (`create`), corrected
 * (`update`), contradicted and faded (`deactivate`) in the period, reinforcements counted only;
 * then the open contradictions it asks the person about (digest-questions.ts).
 * Item text comes from the memory rows that still exist, never from audit snapshots, so a memory
 * forgotten before the digest is built cannot reappear in it; New and Updated list only versions
 * that still hold (one corrected or merged since is told by its successor's line); {@link scrubDigests} removes it
 * from digests already built. Periods chain: each starts where the previous digest ended.
 *
 * Sending is not done here: a channel reads {@link pendingDigests} and reports back with
 * {@link markSent} / {@link markFailed}, so sleep never imports a channel.
 */
import { NotFoundError } from '../../shared/errors';
import type { Digest, Prisma, PrismaClient, Scope } from '../../storage/prisma';
import { isKnowledge } from '../memories/categories';
import { plural } from '../../shared/plural';
import { scopeTimeZone } from '../scopes/scope-policy';
import { conflictQuestions } from './digest-questions';

type Tx = Prisma.TransactionClient;

/**
 * The kinds of digest items, in the order their sections appear: the audit actions a digest
 * lists, then `conflict`, a side of an open contradiction the person is asked about.
 */
export type DigestAction = 'create' | 'update' | 'contradict' | 'deactivate' | 'conflict';

/** One numbered line of a digest (the `items` JSON of a Digest row). */
export interface DigestItem {
  readonly n: number;
  /** The memory `/forget n` removes (for a correction: the new version; its chain goes too). */
  readonly memoryId: string;
  readonly action: DigestAction;
  readonly text: string;
  /** Other memories whose text the line quotes; forgetting any of them removes the line too. */
  readonly refs?: readonly string[];
}

/** A digest's send attempts stop at this many failures by default. */
export const DIGEST_MAX_ATTEMPTS = 5;

/** The audit actions read into items. */
const ACTIONS: readonly DigestAction[] = ['create', 'update', 'contradict', 'deactivate'];
/** Every kind of item, in the order of the sections. */
const SECTIONS: readonly DigestAction[] = [...ACTIONS, 'conflict'];
const HEADINGS: Record<DigestAction, string> = {
  create: 'New',
  update: 'Updated',
  contradict: 'Contradicted',
  deactivate: 'Faded',
  conflict: 'Which is true?',
};
const REINFORCING = ['reinforce', 'revive'];
/**
 * The audit action consolidation writes when it gives up on messages (the memory domain names it
 * so sleep writes and the digest reads the same word without memory importing sleep).
 */
export const GAVE_UP_ACTION = 'consolidation_gave_up';

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

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

function jsonObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function stringField(value: Prisma.JsonValue | null, key: string): string | undefined {
  const v = jsonObject(value)[key];
  return typeof v === 'string' ? v : undefined;
}

function numberField(value: Prisma.JsonValue | null, key: string): number {
  const v = jsonObject(value)[key];
  return typeof v === 'number' ? v : 0;
}

/** The items stored on a digest row (unknown shapes are dropped). */
export function digestItems(digest: Pick<Digest, 'items'>): DigestItem[] {
  if (!Array.isArray(digest.items)) return [];
  return digest.items
    .filter((i): i is Prisma.JsonObject => Boolean(i) && typeof i === 'object' && !Array.isArray(i))
    .flatMap((i) => {
      if (typeof i.n !== 'number' || typeof i.memoryId !== 'string' || typeof i.text !== 'string' || !SECTIONS.includes(i.action as DigestAction)) return [];
      const refs = Array.isArray(i.refs) ? i.refs.filter((r): r is string => typeof r === 'string') : [];
      return [{ n: i.n, memoryId: i.memoryId, action: i.action as DigestAction, text: i.text, ...(refs.length > 0 ? { refs } : {}) }];
    });
}

export interface PeriodEvents {
  readonly items: DigestItem[];
  readonly reinforced: number;
}

/** The period's changes, read from the audit trail and the memory rows that still exist. */
function readPeriod(db: Tx | PrismaClient, scopeId: string, periodStart: Date, periodEnd: Date): Promise<PeriodEvents> {
  return readChanges(db, scopeId, { createdAt: { gte: periodStart, lt: periodEnd } });
}

/**
 * The changes one sleep run made (its audit events carry the run's id), as digest items: what
 * `/sleep` and `cli sleep` tell the person, in the digest's words.
 */
export function readRunChanges(db: Tx | PrismaClient, scopeId: string, runId: string): Promise<PeriodEvents> {
  return readChanges(db, scopeId, { runId });
}

/** The changes among the audit events `where` selects, as numbered digest items. */
async function readChanges(db: Tx | PrismaClient, scopeId: string, where: Prisma.AuditEventWhereInput): Promise<PeriodEvents> {
  const events = await db.auditEvent.findMany({
    where: { ...where, scopeId, subjectType: 'memory', action: { in: [...ACTIONS, ...REINFORCING] } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { action: true, subjectId: true, after: true },
  });
  const ids = new Set<string>();
  for (const e of events) {
    if (e.subjectId) ids.add(e.subjectId);
    for (const key of ['supersededById', 'contradictedBy']) {
      const id = stringField(e.after, key);
      if (id) ids.add(id);
    }
  }
  const rows = await db.memory.findMany({
    where: { scopeId, id: { in: [...ids] } },
    select: { id: true, content: true, confidence: true, category: true, supersededById: true },
  });
  const memories = new Map(rows.map((m) => [m.id, m]));

  let reinforced = 0;
  const found = new Map<string, Omit<DigestItem, 'n'>>();
  for (const e of events) {
    if (REINFORCING.includes(e.action)) {
      reinforced++;
      continue;
    }
    const subject = e.subjectId ? memories.get(e.subjectId) : undefined;
    if (!subject) continue; // forgotten since
    if (!isKnowledge(subject.category)) continue; // a conversation's summary, not something learned about the person
    let item: Omit<DigestItem, 'n'> | undefined;
    if (e.action === 'create') {
      // A correction's new version is listed by its 'update' event; a version corrected or merged
      // since is outdated: its successor's line tells the change, so it is not "New" as well.
      if (!stringField(e.after, 'supersedes') && !subject.supersededById) item = { memoryId: subject.id, action: 'create', text: oneLine(subject.content) };
    } else if (e.action === 'update') {
      const current = memories.get(stringField(e.after, 'supersededById') ?? '');
      // Only a correction to words that still hold: a later correction's line says what they became.
      if (current && !current.supersededById)
        item = { memoryId: current.id, action: 'update', text: `${oneLine(current.content)} (was: ${oneLine(subject.content)})`, refs: [subject.id] };
    } else if (e.action === 'contradict') {
      const other = memories.get(stringField(e.after, 'contradictedBy') ?? '');
      item = other
        ? { memoryId: subject.id, action: 'contradict', text: `${oneLine(subject.content)} (conflicts with: ${oneLine(other.content)})`, refs: [other.id] }
        : { memoryId: subject.id, action: 'contradict', text: oneLine(subject.content) };
    } else if (e.action === 'deactivate') {
      item = { memoryId: subject.id, action: 'deactivate', text: oneLine(subject.content) };
    }
    if (!item) continue;
    const key = `${item.action}:${item.memoryId}`;
    found.delete(key); // the latest event about a memory wins, listed in its order
    found.set(key, item);
  }
  const ordered = ACTIONS.flatMap((action) => [...found.values()].filter((i) => i.action === action));
  return { items: ordered.map((item, i) => ({ n: i + 1, ...item })), reinforced };
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === 'P2002';
}

/**
 * What a period's digest says besides its items, all counts: consolidation deferred by the
 * budget, messages consolidation gave up on, and memories forgotten at the owner's request.
 */
async function readCounts(
  db: Tx | PrismaClient,
  scopeId: string,
  periodStart: Date,
  periodEnd: Date,
): Promise<{ deferred: number; unlearned: number; forgotten: number }> {
  const inPeriod = { gte: periodStart, lt: periodEnd };
  const deferred = await db.sleepRun.count({ where: { scopeId, kind: 'consolidate', status: 'deferred', startedAt: inPeriod } });
  const gaveUp = await db.auditEvent.findMany({ where: { scopeId, action: GAVE_UP_ACTION, createdAt: inPeriod }, select: { after: true } });
  const unlearned = gaveUp.reduce((n, e) => n + numberField(e.after, 'episodes'), 0);
  // One `forget` event per memory forgotten, counting the versions that went with it, as the
  // confirmation did ("I forgot 3 memories"); a purge of the scope says how many went.
  const forgets = await db.auditEvent.findMany({ where: { scopeId, action: 'forget', createdAt: inPeriod }, select: { subjectType: true, after: true } });
  const forgotten = forgets.reduce((n, e) => n + (numberField(e.after, 'removed') || (e.subjectType === 'memory' ? 1 : 0)), 0);
  return { deferred, unlearned, forgotten };
}

/**
 * Builds and stores the digest of the period ending at `periodEnd`, starting at the end of the
 * latest digest that had something in it, or at the scope's creation when none had: a person's
 * first digest covers everything learned so far, even when empty digests were stored before it
 * (empty when the latest such digest already reaches past `periodEnd`). Idempotent: a digest already stored for that
 * period is returned as it is. A period with nothing to say is stored as 'empty' with no
 * content, so the next period starts after it and nothing is sent.
 */
export async function buildDigest(prisma: PrismaClient, scopeId: string, options: { periodEnd: Date; now: Date; defaultTimeZone?: string }): Promise<Digest> {
  const { periodEnd, now } = options;
  const existing = await prisma.digest.findUnique({ where: { scopeId_periodEnd: { scopeId, periodEnd } } });
  if (existing) return existing;
  const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { createdAt: true, timezone: true } });
  if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
  // The latest digest, even one ending after `periodEnd` (a digest asked for a moment after a
  // scheduled one whose end was a little ahead): what it covered is never reported again, so such
  // a period is empty. Looking only at digests that end earlier would start this one at the
  // scope's creation and repeat everything already sent.
  // Empty digests (nothing to say, never sent) do not start a period: what they covered had
  // nothing in it then, and a first digest must not lose what was learned before them.
  const previous = await prisma.digest.findFirst({ where: { scopeId, status: { not: 'empty' } }, orderBy: { periodEnd: 'desc' }, select: { periodEnd: true } });
  const start = previous?.periodEnd ?? scope.createdAt;
  const periodStart = start.getTime() > periodEnd.getTime() ? periodEnd : start;
  const changes = await readPeriod(prisma, scopeId, periodStart, periodEnd);
  const { reinforced } = changes;
  // Open contradictions not asked about before: "Which is true?" (digest-questions.ts).
  const items = [...changes.items, ...(await conflictQuestions(prisma, scopeId, changes.items.length + 1))];
  // Consolidation deferred by the daily token budget, messages consolidation gave up on (audit
  // 'consolidation_gave_up') and memories forgotten are said too. One zone per scope: its own, else TZ.
  const counts = await readCounts(prisma, scopeId, periodStart, periodEnd);
  const content = renderDigest({ periodStart, periodEnd, timeZone: scopeTimeZone(scope, options.defaultTimeZone), items, reinforced, ...counts });
  try {
    return await prisma.digest.create({
      data: {
        scopeId,
        periodStart,
        periodEnd,
        content,
        items: items as unknown as Prisma.InputJsonArray,
        status: content !== '' ? 'pending' : 'empty',
        createdAt: now,
      },
    });
  } catch (error) {
    // Another process built the same period between our read and write.
    if (isUniqueViolation(error)) return prisma.digest.findUniqueOrThrow({ where: { scopeId_periodEnd: { scopeId, periodEnd } } });
    throw error;
  }
}

/** The latest digest with something in it (the last one the owner was, or will be, sent). */
export function latestDigest(prisma: PrismaClient, scopeId: string): Promise<Digest | null> {
  return prisma.digest.findFirst({ where: { scopeId, status: { not: 'empty' } }, orderBy: { periodEnd: 'desc' } });
}

/** The memory behind item `n` of the latest digest (`/forget n`); null when there is no such item. */
export async function digestItem(prisma: PrismaClient, scopeId: string, n: number): Promise<string | null> {
  const digest = await latestDigest(prisma, scopeId);
  if (!digest) return null;
  return digestItems(digest).find((i) => i.n === n)?.memoryId ?? null;
}

/**
 * Removes forgotten memories from every digest of the scope: the items about them (or quoting
 * them) go and the content is rewritten from what is left, numbers unchanged so an answer to the
 * digest still means the same item. Sent digests are scrubbed too: the text must not survive in
 * the database. A pending digest left with nothing becomes 'empty' and is not sent. Runs inside
 * the forgetting transaction; returns how many digests changed. `holds`, when given, also drops
 * the items whose text holds what is forgotten (forgetting by words reaches items about memories
 * it did not remove, e.g. one that quoted the words).
 */
export async function scrubDigests(
  tx: Tx,
  scopeId: string,
  memoryIds: readonly string[],
  holds?: (text: string) => boolean,
  defaultTimeZone?: string,
): Promise<number> {
  if (memoryIds.length === 0 && !holds) return 0;
  const gone = new Set(memoryIds);
  const digests = await tx.digest.findMany({ where: { scopeId, status: { not: 'empty' } } });
  const timeZone =
    digests.length > 0
      ? scopeTimeZone({ timezone: (await tx.scope.findUnique({ where: { id: scopeId }, select: { timezone: true } }))?.timezone ?? null }, defaultTimeZone)
      : null;
  let changed = 0;
  for (const digest of digests) {
    const items = digestItems(digest);
    const kept = items.filter((i) => !gone.has(i.memoryId) && !(i.refs ?? []).some((r) => gone.has(r)) && !holds?.(i.text));
    if (kept.length === items.length) continue;
    const reinforced = kept.length > 0 ? (await readPeriod(tx, scopeId, digest.periodStart, digest.periodEnd)).reinforced : 0;
    const counts = await readCounts(tx, scopeId, digest.periodStart, digest.periodEnd);
    const content = renderDigest({ periodStart: digest.periodStart, periodEnd: digest.periodEnd, timeZone, items: kept, reinforced, ...counts });
    const unsent = digest.status === 'pending' || digest.status === 'failed';
    await tx.digest.update({
      where: { id: digest.id },
      data: {
        items: kept as unknown as Prisma.InputJsonArray,
        content,
        status: content === '' && unsent ? 'empty' : undefined,
      },
    });
    changed++;
  }
  return changed;
}

/**
 * Digests waiting to be sent, oldest period first, with their scope (owner and channel): pending
 * ones and failed ones with attempts left. Scopes without an owner have nobody to send to.
 * `channel` keeps only the scopes of one channel (a sender must not be starved by digests that
 * another channel delivers).
 */
export function pendingDigests(
  prisma: PrismaClient,
  options: { maxAttempts?: number; limit?: number; channel?: string } = {},
): Promise<Array<Digest & { scope: Scope }>> {
  return prisma.digest.findMany({
    where: {
      status: { in: ['pending', 'failed'] },
      attempts: { lt: options.maxAttempts ?? DIGEST_MAX_ATTEMPTS },
      scope: { ownerId: { not: null }, ...(options.channel ? { channel: options.channel } : {}) },
    },
    include: { scope: true },
    orderBy: [{ periodEnd: 'asc' }, { id: 'asc' }],
    take: options.limit ?? 100,
  });
}

/** The channel delivered the digest. */
export async function markSent(prisma: PrismaClient, id: string, now: Date = new Date()): Promise<void> {
  await prisma.digest.update({ where: { id }, data: { status: 'sent', sentAt: now, attempts: { increment: 1 } } });
}

/** The channel could not deliver the digest; it is tried again until the attempts run out. */
export async function markFailed(prisma: PrismaClient, id: string): Promise<void> {
  await prisma.digest.update({ where: { id }, data: { status: 'failed', attempts: { increment: 1 } } });
}
