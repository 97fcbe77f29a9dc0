/**
 * The digest (seed 000): what the agent learned about its owner in a period, told to them once,
 * with every item numbered so they can answer `/forget N`.
 *
 * A digest is read from the audit trail, not from a model: what was learned (`create`), corrected
 * (`update`), contradicted and faded (`deactivate`) in the period, reinforcements counted only;
 * then the open contradictions it asks the person about (digest-questions.ts). The items' shape is
 * digest-items.ts; how a digest reads, digest-render.ts.
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
import { scopeTimeZone } from '../scopes/scope-policy';
import { conflictQuestions } from './digest-questions';
import { ACTIONS, type DigestItem, digestItems, numberField, stringField } from './digest-items';
import { renderDigest } from './digest-render';

export { type DigestAction, type DigestItem, digestItems } from './digest-items';
export { formatLocalMinute, renderChangeSections, renderDigest } from './digest-render';

type Tx = Prisma.TransactionClient;

/** A digest's send attempts stop at this many failures by default. */
export const DIGEST_MAX_ATTEMPTS = 5;

const REINFORCING = ['reinforce', 'revive'];
/**
 * The audit action consolidation writes when it gives up on messages (the memory domain names it
 * so sleep writes and the digest reads the same word without memory importing sleep).
 */
export const GAVE_UP_ACTION = 'consolidation_gave_up';

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
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
