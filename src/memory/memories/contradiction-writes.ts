/**
 * The writer's side of contradictions: new information that conflicts with a memory is kept
 * beside it and linked (the contradicted side loses confidence, never its text), and a conflict is
 * settled in favour of one side when the person says which is true or restates one side; the
 * other side is then history, like a superseded version. Each change is audited (memory-audit.ts).
 */
import { ValidationError } from '../../shared/errors';
import type { Memory } from '../../storage/prisma';
import { audit, cleanReason, snapshot } from './memory-audit';
import type { ChangeOrigin, Tx } from './memory-writer';
import { load } from './memory-write-checks';

export const CONTRADICTION_PENALTY = 0.2;
export const CONTRADICTION_FLOOR = 0.1;

/**
 * New information conflicts with a memory: both sides are kept and linked, and the contradicted
 * memory loses 0.2 confidence (never below 0.1) instead of being overwritten.
 */
export async function contradictMemory(tx: Tx, scopeId: string, id: string, contradictedById: string, origin: ChangeOrigin): Promise<Memory> {
  const before = await load(tx, scopeId, id);
  await load(tx, scopeId, contradictedById);
  const after = await tx.memory.update({ where: { id }, data: { confidence: Math.max(CONTRADICTION_FLOOR, before.confidence - CONTRADICTION_PENALTY) } });
  await tx.memoryLink.upsert({
    where: { fromId_toId_kind: { fromId: contradictedById, toId: id, kind: 'contradicts' } },
    create: { scopeId, fromId: contradictedById, toId: id, kind: 'contradicts', reason: cleanReason(origin.reason), createdAt: origin.now },
    update: { reason: cleanReason(origin.reason) },
  });
  await audit(tx, scopeId, origin, 'contradict', id, snapshot(before), { ...snapshot(after), contradictedBy: contradictedById });
  return after;
}

/** Confidence of the side of a contradiction the person (or a restatement) settled as true. */
export const SETTLED_CONFIDENCE = 0.9;

/**
 * Settles a contradiction in favour of `keptId`: the other side stops being current (validTo now,
 * superseded by the kept one, a `supersedes` link, kept as history for "what was believed then"),
 * and the kept side is confirmed (counted, confidence at least {@link SETTLED_CONFIDENCE}: the
 * person said which is true). One `resolve` audit event on the side set aside, one `reinforce` on
 * the kept side naming it. Refused unless the two are current and linked as contradicting.
 */
export async function resolveContradiction(
  tx: Tx,
  scopeId: string,
  keptId: string,
  otherId: string,
  origin: ChangeOrigin,
): Promise<{ kept: Memory; other: Memory }> {
  const kept = await load(tx, scopeId, keptId);
  const other = await load(tx, scopeId, otherId);
  if (kept.validTo || other.validTo || !kept.active || !other.active) {
    throw new ValidationError('only a contradiction between two current memories can be settled', { code: 'memory.superseded' });
  }
  const link = await tx.memoryLink.findFirst({
    where: {
      scopeId,
      kind: 'contradicts',
      OR: [
        { fromId: keptId, toId: otherId },
        { fromId: otherId, toId: keptId },
      ],
    },
    select: { id: true },
  });
  if (!link) throw new ValidationError(`memories ${keptId} and ${otherId} are not in conflict`, { code: 'memory.no_conflict' });
  const after = await tx.memory.update({
    where: { id: keptId },
    data: { reinforcementCount: { increment: 1 }, lastReinforcedAt: origin.now, confidence: Math.max(kept.confidence, SETTLED_CONFIDENCE) },
  });
  const setAside = await tx.memory.update({ where: { id: otherId }, data: { active: false, validTo: origin.now, supersededById: keptId } });
  await tx.memoryLink.upsert({
    where: { fromId_toId_kind: { fromId: keptId, toId: otherId, kind: 'supersedes' } },
    create: { scopeId, fromId: keptId, toId: otherId, kind: 'supersedes', reason: cleanReason(origin.reason), createdAt: origin.now },
    update: {},
  });
  await audit(tx, scopeId, origin, 'resolve', otherId, snapshot(other), { ...snapshot(setAside), resolvedInFavourOf: keptId });
  await audit(tx, scopeId, origin, 'reinforce', keptId, snapshot(kept), { ...snapshot(after), resolved: otherId });
  return { kept: after, other: setAside };
}

/**
 * The restatement rule's side of contradictions: `restatedId` was said again (folded into
 * `currentId`, itself or its new version), so every open conflict it was in is settled in
 * favour of what was restated. Returns the ids set aside.
 */
export async function settleRestated(tx: Tx, scopeId: string, restatedId: string, currentId: string, origin: ChangeOrigin): Promise<string[]> {
  const links = await tx.memoryLink.findMany({
    where: { scopeId, kind: 'contradicts', OR: [{ fromId: restatedId }, { toId: restatedId }] },
    select: { fromId: true, toId: true },
  });
  const others = [...new Set(links.map((l) => (l.fromId === restatedId ? l.toId : l.fromId)))];
  const setAside: string[] = [];
  for (const otherId of others) {
    const other = await tx.memory.findFirst({ where: { scopeId, id: otherId, active: true, validTo: null }, select: { id: true } });
    if (!other || otherId === currentId) continue;
    if (currentId !== restatedId) {
      // The restated side got a new version: the conflict now stands between it and the other side.
      await tx.memoryLink.upsert({
        where: { fromId_toId_kind: { fromId: otherId, toId: currentId, kind: 'contradicts' } },
        create: { scopeId, fromId: otherId, toId: currentId, kind: 'contradicts', reason: null, createdAt: origin.now },
        update: {},
      });
    }
    await resolveContradiction(tx, scopeId, currentId, otherId, {
      ...origin,
      reason: `said again: ${restatedId === currentId ? 'the memory' : 'an earlier version'} was restated`,
    });
    setAside.push(otherId);
  }
  return setAside;
}
