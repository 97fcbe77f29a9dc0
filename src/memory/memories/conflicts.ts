/**
 * Open contradictions of a scope: pairs of current memories linked `contradicts` (consolidation's
 * contradict step keeps both sides, memory-writer.ts `contradictMemory`). While a pair stands,
 * every reader is told it is a conflict rather than shown two facts: the reply prompt and the
 * memory tools annotate both sides with their dates and sources ({@link conflictNote}), the soul
 * states only the side most likely current ({@link likelyCurrent}), and the digest asks the
 * person which is true. The person's answer, or a restatement of one side, settles it through the
 * writer (`resolveContradiction`), after which the pair is no longer open.
 */
import type { Prisma } from '../../storage/prisma';

/** Where open conflicts are read: the client or an open transaction. */
export type ConflictStore = Pick<Prisma.TransactionClient, 'memoryLink' | 'memory' | 'memorySource'>;

/** One side of a conflict, with what says how current it is. */
export interface ConflictSide {
  readonly id: string;
  readonly content: string;
  readonly category: string;
  /** How it was learned: `stated` by the person, `observed`, or `inferred`. */
  readonly sourceType: string;
  /** When the person last said it: the newest message it was learned from (its validFrom when none). */
  readonly saidAt: Date;
  /** Messages it was learned from. */
  readonly sources: number;
}

/** A pair of current memories that contradict each other; `current` is the side most likely true now. */
export interface Conflict {
  readonly current: ConflictSide;
  readonly other: ConflictSide;
  /** Why `current` is preferred: it was stated where the other was observed or inferred, or it is newer. */
  readonly why: 'stated' | 'newer';
}

/** Trust order of how a memory was learned: what the person said beats what was observed, which beats a guess. */
const SOURCE_RANK: Record<string, number> = { stated: 2, observed: 1, inferred: 0 };
/** Open conflicts read per scope at most (a prompt or a digest shows a few). */
const MAX_CONFLICTS = 50;

function rank(side: ConflictSide): number {
  return SOURCE_RANK[side.sourceType] ?? 0;
}

/**
 * Which side is more likely current: stated beats observed beats inferred, then newer (the
 * later message) beats older; the id breaks an exact tie so the answer is stable.
 */
export function likelyCurrent(a: ConflictSide, b: ConflictSide): Conflict {
  if (rank(a) !== rank(b)) return rank(a) > rank(b) ? { current: a, other: b, why: 'stated' } : { current: b, other: a, why: 'stated' };
  const newer = a.saidAt.getTime() !== b.saidAt.getTime() ? a.saidAt.getTime() > b.saidAt.getTime() : a.id > b.id;
  return newer ? { current: a, other: b, why: 'newer' } : { current: b, other: a, why: 'newer' };
}

/** The scope's open conflicts (both sides active and current), the most recently said first. */
export async function openConflicts(db: ConflictStore, scopeId: string): Promise<Conflict[]> {
  const links = await db.memoryLink.findMany({
    where: { scopeId, kind: 'contradicts', from: { active: true, validTo: null }, to: { active: true, validTo: null } },
    select: { fromId: true, toId: true },
    orderBy: { createdAt: 'desc' },
    take: MAX_CONFLICTS * 2,
  });
  const pairs = new Map<string, [string, string]>();
  for (const l of links) {
    const key = l.fromId < l.toId ? `${l.fromId}|${l.toId}` : `${l.toId}|${l.fromId}`;
    if (!pairs.has(key) && pairs.size < MAX_CONFLICTS) pairs.set(key, [l.fromId, l.toId]);
  }
  if (pairs.size === 0) return [];
  const ids = [...new Set([...pairs.values()].flat())];
  const rows = await db.memory.findMany({
    where: { scopeId, id: { in: ids } },
    select: { id: true, content: true, category: true, sourceType: true, validFrom: true },
  });
  const sources = await db.memorySource.findMany({
    where: { scopeId, memoryId: { in: ids } },
    select: { memoryId: true, episode: { select: { timestamp: true } } },
  });
  const sides = new Map<string, ConflictSide>();
  for (const m of rows) {
    const mine = sources.filter((s) => s.memoryId === m.id);
    const newest = Math.max(0, ...mine.map((s) => s.episode.timestamp.getTime()));
    sides.set(m.id, {
      id: m.id,
      content: m.content,
      category: m.category,
      sourceType: m.sourceType,
      saidAt: newest > 0 ? new Date(newest) : m.validFrom,
      sources: mine.length,
    });
  }
  const conflicts: Conflict[] = [];
  for (const [a, b] of pairs.values()) {
    const sa = sides.get(a);
    const sb = sides.get(b);
    if (sa && sb) conflicts.push(likelyCurrent(sa, sb));
  }
  return conflicts;
}

/** The ids of the sides of open conflicts that are not the likely-current one (the soul leaves them out). */
export function unlikelySides(conflicts: readonly Conflict[]): Set<string> {
  const current = new Set(conflicts.map((c) => c.current.id));
  // A memory likely current in one pair and not in another is still shown: only a side that
  // loses every pair it is in is left out.
  return new Set(conflicts.map((c) => c.other.id).filter((id) => !current.has(id)));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** `stated 2024-06-01` (how it was learned and the day it was last said, UTC). */
export function describeSide(side: ConflictSide): string {
  return `${side.sourceType} ${side.saidAt.toISOString().slice(0, 10)}`;
}

/**
 * What a reader of `memoryId` is told about the conflicts it is in, or undefined when it is in
 * none: its own date and source, the other side with its date and source, and which side is
 * likely current and why. Shown next to the memory in the reply prompt and the memory tools:
 * `[conflict: stated 2024-05-01; conflicts with “…” (stated 2024-06-01, newer), likely current]`.
 */
export function conflictNote(memoryId: string, conflicts: readonly Conflict[]): string | undefined {
  const notes: string[] = [];
  let own: ConflictSide | undefined;
  for (const c of conflicts) {
    const mine = c.current.id === memoryId ? c.current : c.other.id === memoryId ? c.other : undefined;
    if (!mine) continue;
    own = mine;
    const theirs = mine === c.current ? c.other : c.current;
    const verdict = mine === c.current ? `this one is likely current (${c.why})` : `that one is likely current (${c.why})`;
    const tag = theirs === c.current ? `, ${c.why}` : '';
    notes.push(`conflicts with “${oneLine(theirs.content)}” (${describeSide(theirs)}${tag}); ${verdict}`);
  }
  if (!own) return undefined;
  return `[conflict, unresolved: ${describeSide(own)}; ${notes.join('; ')}; ask the person which is true if it matters]`;
}
