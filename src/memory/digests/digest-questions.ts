/**
 * The digest's "Which is true?" section: each open contradiction of the scope (conflicts.ts) not
 * asked about in an earlier digest becomes two numbered items, the side most likely current
 * first, each with when and how it was learned. The person answers `/keep N` (or taps the
 * button Telegram puts under the digest) and the other side is superseded (conflict-book.ts).
 * Asked once: an unanswered conflict stays open and annotated in every prompt, but the digest
 * does not nag about it night after night.
 */
import type { Digest, Prisma, PrismaClient } from '../../storage/prisma';
import { openConflicts, type ConflictSide } from '../memories/conflicts';
import type { DigestItem } from './digest';

type Tx = Prisma.TransactionClient;

/** Contradictions one digest asks about at most (the others wait for the next one). */
export const MAX_QUESTIONS = 5;
/** Earlier digests looked through for questions already asked. */
const ASKED_LOOKBACK = 60;

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function pairKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/** How the person reads where a side came from: "you told me on 2024-06-01". */
function learned(side: ConflictSide): string {
  const day = side.saidAt.toISOString().slice(0, 10);
  if (side.sourceType === 'stated') return `you told me on ${day}`;
  if (side.sourceType === 'observed') return `I noted it on ${day}`;
  return `my guess from ${day}`;
}

/** The conflicts earlier digests asked about, as pair keys (from their `conflict` items). */
function askedIn(digests: ReadonlyArray<Pick<Digest, 'items'>>): Set<string> {
  const asked = new Set<string>();
  for (const d of digests) {
    if (!Array.isArray(d.items)) continue;
    for (const i of d.items) {
      if (!i || typeof i !== 'object' || Array.isArray(i) || i.action !== 'conflict') continue;
      const ref = Array.isArray(i.refs) ? i.refs[0] : undefined;
      if (typeof i.memoryId === 'string' && typeof ref === 'string') asked.add(pairKey(i.memoryId, ref));
    }
  }
  return asked;
}

/**
 * The questions of the next digest: two items per open conflict not asked before, numbered from
 * `firstN`, the likely-current side first (its text says so) and the other prefixed "or".
 */
export async function conflictQuestions(db: Tx | PrismaClient, scopeId: string, firstN: number): Promise<DigestItem[]> {
  const conflicts = await openConflicts(db, scopeId);
  if (conflicts.length === 0) return [];
  const earlier = await db.digest.findMany({
    where: { scopeId, status: { not: 'empty' } },
    orderBy: { periodEnd: 'desc' },
    take: ASKED_LOOKBACK,
    select: { items: true },
  });
  const asked = askedIn(earlier);
  const items: DigestItem[] = [];
  let n = firstN;
  for (const c of conflicts.filter((c) => !asked.has(pairKey(c.current.id, c.other.id))).slice(0, MAX_QUESTIONS)) {
    const why = c.why === 'newer' ? 'newer' : 'you said it yourself';
    items.push({
      n: n++,
      memoryId: c.current.id,
      action: 'conflict',
      text: `${oneLine(c.current.content)} (${learned(c.current)}; ${why})`,
      refs: [c.other.id],
    });
    items.push({ n: n++, memoryId: c.other.id, action: 'conflict', text: `or: ${oneLine(c.other.content)} (${learned(c.other)})`, refs: [c.current.id] });
  }
  return items;
}
