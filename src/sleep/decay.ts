/**
 * Decay and forgetting (seed 000 "Memory Decay & Forgetting", seed 004 upkeep), run daily.
 *
 * - A memory not reinforced for 30 days loses 10 % confidence, and one more step for each further
 *   30 days without new evidence (the step count resets when evidence arrives), down to a floor
 *   of {@link DECAY_FLOOR}: time alone makes a memory less certain, never gone. Only a memory that
 *   something contradicts (a `contradicts` link points at it) keeps decaying below the floor; below
 *   0.1 it fades: inactive, never deleted; deep search still finds it and reinforcement revives it.
 * - Importance follows use: memories put into replies' context drift up, unused ones drift back
 *   toward their learned value. Confidence never follows use: being retrieved is not evidence
 *   (retrieval-driven reinforcement makes old memories win forever).
 * - Events expire: a memory of a dated event (category `schedule` or `goal`) whose latest stated
 *   date (`on 2026-03-06`, as consolidation writes relative dates) passed more than
 *   {@link EVENT_GRACE_DAYS} days ago fades, audited like any fading. The date is read from the
 *   content rather than kept in a column: consolidation writes it there, a correction that moves
 *   the appointment changes it with the words, and no schema change is needed.
 * - A pinned memory (the person pinned it: `/pin N`, the memory page) is left out of all of the
 *   above: the person said it matters, so neither time nor a passed date fades it.
 */
import { DEACTIVATION_THRESHOLD, decayMemory, type ChangeOrigin } from '../memory/memories/memory-writer';
import { latestStatedDate } from '../shared/relative-dates';
import type { PrismaClient } from '../storage/prisma';

export interface DecayOptions {
  /** Days without reinforcement per decay step (seed 000: 30). */
  readonly periodDays: number;
  /** Confidence kept per step (seed 000: 0.9). */
  readonly factor: number;
}

export const DEFAULT_DECAY: DecayOptions = { periodDays: 30, factor: 0.9 };

/**
 * The confidence scheduled decay stops at. Silence is weak evidence: a fact nobody mentioned for a
 * year (a birthday, an allergy) is as likely true as it was, so time alone never deactivates it.
 */
export const DECAY_FLOOR = 0.3;

const DAY_MS = 86_400_000;
/** Categories whose dated memories are events that end (a birthday "fact" never does). */
export const EVENT_CATEGORIES = ['schedule', 'goal'];
/** Days an event is kept after its date (it may run late, or be talked about afterwards). */
export const EVENT_GRACE_DAYS = 2;

export interface DecayResult {
  readonly decayed: number;
  readonly deactivated: number;
  readonly importanceAdjusted: number;
  /** Dated events faded because their date passed. */
  readonly expired: number;
}

/** Importance from use: log-scaled access count, weighted by how recent the last access was. */
export function accessImportance(accessCount: number, lastAccessedAt: Date | null, now: Date): number {
  if (accessCount <= 0 || !lastAccessedAt) return 0;
  const ageDays = Math.max(0, (now.getTime() - lastAccessedAt.getTime()) / DAY_MS);
  return Math.min(1, Math.log2(1 + accessCount) / 5) * 0.5 ** (ageDays / 30);
}

export async function decayScope(prisma: PrismaClient, scopeId: string, origin: ChangeOrigin, options: DecayOptions = DEFAULT_DECAY): Promise<DecayResult> {
  const period = options.periodDays * DAY_MS;
  const candidates = await prisma.memory.findMany({
    where: { scopeId, active: true, validTo: null, pinned: false, lastReinforcedAt: { lt: new Date(origin.now.getTime() - period) } },
    select: { id: true, confidence: true, decaySteps: true, lastReinforcedAt: true },
  });
  const contradicted = new Set(
    (await prisma.memoryLink.findMany({ where: { scopeId, kind: 'contradicts', toId: { in: candidates.map((c) => c.id) } }, select: { toId: true } })).map(
      (l) => l.toId,
    ),
  );
  let decayed = 0;
  let deactivated = 0;
  for (const m of candidates) {
    const due = Math.floor((origin.now.getTime() - m.lastReinforcedAt.getTime()) / period);
    if (due <= m.decaySteps) continue;
    const floor = contradicted.has(m.id) ? 0 : DECAY_FLOOR;
    if (m.confidence <= floor) continue;
    // One step per run even after a long pause, so a missed night never fades memories at once.
    const after = await prisma.$transaction((tx) =>
      decayMemory(
        tx,
        scopeId,
        m.id,
        Math.max(floor, m.confidence * options.factor),
        { ...origin, reason: `not reinforced for ${Math.floor((origin.now.getTime() - m.lastReinforcedAt.getTime()) / DAY_MS)} days` },
        true,
      ),
    );
    decayed++;
    if (!after.active) deactivated++;
  }

  let expired = 0;
  const events = await prisma.memory.findMany({
    where: { scopeId, active: true, validTo: null, pinned: false, category: { in: EVENT_CATEGORIES } },
    select: { id: true, content: true, confidence: true },
  });
  for (const m of events) {
    const day = latestStatedDate(m.content);
    if (!day || origin.now.getTime() - day.getTime() <= (EVENT_GRACE_DAYS + 1) * DAY_MS) continue;
    // Faded below the threshold like a memory without evidence: kept as history, revived by new evidence.
    const confidence = Math.min(m.confidence, DEACTIVATION_THRESHOLD / 2);
    await prisma.$transaction((tx) =>
      decayMemory(tx, scopeId, m.id, confidence, { ...origin, reason: `the event on ${day.toISOString().slice(0, 10)} has passed` }),
    );
    expired++;
    deactivated++;
  }

  // Importance drifts toward use (access), a quarter of the way per run; no audit event: it
  // changes ranking only, never what is believed.
  const used = await prisma.memory.findMany({
    where: { scopeId, active: true, accessCount: { gt: 0 } },
    select: { id: true, importance: true, accessCount: true, lastAccessedAt: true },
  });
  let importanceAdjusted = 0;
  for (const m of used) {
    const target = Math.max(m.importance, accessImportance(m.accessCount, m.lastAccessedAt, origin.now));
    const next = Math.round((m.importance + (target - m.importance) * 0.25) * 1000) / 1000;
    if (next !== m.importance) {
      await prisma.memory.updateMany({ where: { scopeId, id: m.id }, data: { importance: next } });
      importanceAdjusted++;
    }
  }
  return { decayed, deactivated, importanceAdjusted, expired };
}
