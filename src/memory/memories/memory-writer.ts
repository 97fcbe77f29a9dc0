/**
 * The write side of consolidated memory (seed 000 step 3, seed 004 "time and truth"): every
 * change a sleep run, a person or an admin makes to a memory, each with one audit event that
 * records the state before and after, the reason and the run.
 *
 * The writer works on a transaction client: the caller decides what is atomic (a whole
 * consolidation batch is one transaction). Every call names the scope and every lookup filters by
 * it, so an id from another scope is "not found", never changed.
 *
 * The numbers are seed 000's: reinforcement +0.05 (max 1), contradiction -0.2 (min 0.1),
 * deactivation below 0.1. Nothing here deletes except `forget`, which is the person's choice.
 *
 * Every call that adds content or evidence (create, supersede, reinforce) passes the rules of
 * memory-guards.ts before anything is written, and refuses with {@link MemoryRefused} (its code
 * names the rule): the scope exists; the text is not an instruction, not about the assistant,
 * within the size, with secrets redacted (a key someone pasted into a chat is `[REDACTED]` in the
 * memory, its audit snapshots, the soul, digests and every prompt it reaches); and every cited
 * episode is the person's own turn in this scope (or a note relaying one), with at least one
 * cited unless the owner wrote the memory themselves ({@link ChangeOrigin.by}).
 *
 * The reads those checks make are `memory-write-checks.ts`; the audit events and their snapshots,
 * `memory-audit.ts`; contradicting and settling, `contradiction-writes.ts`; forgetting,
 * `memory-forget.ts` (both re-exported here: this module stays the one write path callers import).
 */
import { ValidationError } from '../../shared/errors';
import type { Memory, Prisma } from '../../storage/prisma';
import { checkedContent } from './memory-guards';
import { audit, cleanReason, snapshot } from './memory-audit';
import { checkEvidence, checkScope, load, restatedMemory } from './memory-write-checks';
import { addsInformation, type Neighbour } from './restatements';
import { nameTheSubject, speakerOfWrite } from './speakers';
import { settleRestated } from './contradiction-writes';

export {
  CONTRADICTION_FLOOR,
  CONTRADICTION_PENALTY,
  contradictMemory,
  resolveContradiction,
  SETTLED_CONFIDENCE,
} from './contradiction-writes';
export { forgetMemory } from './memory-forget';

export type Tx = Prisma.TransactionClient;

/** How a memory was learned (seed 003 source trust) and the trust each kind gets by default. */
export type SourceType = 'stated' | 'observed' | 'inferred';
export const SOURCE_TRUST: Record<SourceType, number> = { stated: 1, observed: 0.8, inferred: 0.5 };

export const REINFORCE_STEP = 0.05;
export const DEACTIVATION_THRESHOLD = 0.1;

/** Who made a change, for the audit trail. */
export interface ChangeOrigin {
  readonly runId?: string;
  readonly reason?: string;
  readonly now: Date;
  /**
   * `owner`: the owner wrote this memory themselves (an import, an admin tool, a test fixture),
   * so it needs no episode as evidence; every other rule still applies, and episodes it does cite
   * must still be valid evidence. Everything learned from conversations leaves it unset.
   */
  readonly by?: 'owner';
}

export interface NewMemory {
  readonly scopeId: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  readonly importance?: number;
  readonly sourceType?: SourceType;
  readonly sourceTrust?: number;
  readonly sourceEpisodeIds?: readonly string[];
  /**
   * Current memories near this one by meaning, found before the transaction
   * (restatements.ts `findNeighbours`): the restatement rule compares the content with them.
   * Without them only a memory with the very same key words is a restatement.
   */
  readonly neighbours?: readonly Neighbour[];
  /** A memory this one must not be folded into (a contradiction's statement vs. what it contradicts). */
  readonly notRestating?: string;
}

/**
 * What a write did: `created` a row; or found the content already known and `reinforced` that
 * memory, or `revised` it (the new wording adds a name or a number), naming it in `restated`.
 */
export interface WriteResult {
  readonly action: 'created' | 'reinforced' | 'revised';
  readonly memory: Memory;
  readonly restated?: string;
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}

/** Links checked evidence (see checkEvidence) to a memory. */
async function addSources(tx: Tx, scopeId: string, memoryId: string, episodeIds: readonly string[]): Promise<void> {
  for (const id of episodeIds) {
    await tx.memorySource.upsert({
      where: { memoryId_episodeId: { memoryId, episodeId: id } },
      create: { scopeId, memoryId, episodeId: id },
      update: {},
    });
  }
}

/** Stores a memory, or confirms the one that already holds it (see {@link writeMemory}); returns the row. */
export async function createMemory(tx: Tx, input: NewMemory, origin: ChangeOrigin): Promise<Memory> {
  return (await writeMemory(tx, input, origin)).memory;
}

/**
 * Stores what was learned. A restatement of a current memory of the scope (restatements.ts) is
 * not stored twice: it reinforces that memory, or revises it when the new wording adds a name or
 * a number; the result says which.
 */
export async function writeMemory(tx: Tx, input: NewMemory, origin: ChangeOrigin): Promise<WriteResult> {
  const sourceType = input.sourceType ?? 'stated';
  const checked = checkedContent(input.content);
  await checkScope(tx, input.scopeId);
  const evidence = await checkEvidence(tx, input.scopeId, input.sourceEpisodeIds, origin, sourceType);
  // In a group the memory is about the one person whose words it came from, and says so by name.
  const { subject, group } = await speakerOfWrite(tx, input.scopeId, evidence);
  const content = group && subject ? nameTheSubject(checked, subject) : checked;
  const category = input.category.trim().toLowerCase() || 'fact';
  const known = await restatedMemory(tx, input, content, category, subject?.id);
  if (known) {
    const why = `restates memory ${known.id}${origin.reason ? ` (${origin.reason})` : ''}`;
    // A side of a contradiction said again settles it in favour of that side (settleRestated;
    // reinforceMemory does the same).
    if (addsInformation(content, known.content)) {
      const { current } = await supersedeMemory(
        tx,
        input.scopeId,
        known.id,
        { content, sourceEpisodeIds: evidence },
        { ...origin, reason: `${why}, adding detail` },
      );
      await settleRestated(tx, input.scopeId, known.id, current.id, origin);
      return { action: 'revised', memory: current, restated: known.id };
    }
    return { action: 'reinforced', memory: await reinforceMemory(tx, input.scopeId, known.id, evidence, { ...origin, reason: why }), restated: known.id };
  }
  const memory = await tx.memory.create({
    data: {
      scopeId: input.scopeId,
      category,
      content,
      subjectId: subject?.id ?? null,
      subjectName: subject?.name ?? null,
      confidence: clamp01(input.confidence),
      importance: clamp01(input.importance ?? 0.5),
      sourceType,
      sourceTrust: clamp01(input.sourceTrust ?? SOURCE_TRUST[sourceType]),
      lastReinforcedAt: origin.now,
      validFrom: origin.now,
      createdAt: origin.now,
    },
  });
  await addSources(tx, input.scopeId, memory.id, evidence);
  await audit(tx, input.scopeId, origin, 'create', memory.id, null, snapshot(memory));
  return { action: 'created', memory };
}

/**
 * New evidence confirms a memory: +0.05 confidence, counted, and revived if it had faded. A
 * memory confirmed while one side of an open contradiction wins it (see settleRestated): the
 * person said it again, after the other side.
 */
export async function reinforceMemory(
  tx: Tx,
  scopeId: string,
  id: string,
  sourceEpisodeIds: readonly string[] | undefined,
  origin: ChangeOrigin,
): Promise<Memory> {
  const before = await load(tx, scopeId, id);
  if (before.validTo) throw new ValidationError(`memory ${id} was superseded; reinforce its current version`, { code: 'memory.superseded' });
  const evidence = await checkEvidence(tx, scopeId, sourceEpisodeIds, origin);
  const after = await tx.memory.update({
    where: { id },
    data: {
      reinforcementCount: { increment: 1 },
      lastReinforcedAt: origin.now,
      confidence: Math.min(1, before.confidence + REINFORCE_STEP),
      active: true,
      decaySteps: 0,
    },
  });
  await addSources(tx, scopeId, id, evidence);
  await audit(tx, scopeId, origin, before.active ? 'reinforce' : 'revive', id, snapshot(before), snapshot(after));
  // Confirmed again: a contradiction it was in is settled in its favour.
  const settled = await settleRestated(tx, scopeId, id, id, origin);
  return settled.length > 0 ? load(tx, scopeId, id) : after;
}

/**
 * A faded memory the person (or the agent, for them) asked for and got back is revived: active
 * again, reinforced like new evidence would (+0.05 confidence, counted, its decay clock reset) and
 * accessed now. Being asked for by name is the one use that counts as a confirmation: the person
 * brought it back themselves. No episode is cited: the question is not evidence of the fact.
 * A current memory is left as it is (null); a superseded one is history and is never revived.
 */
export async function reviveMemory(tx: Tx, scopeId: string, id: string, origin: ChangeOrigin): Promise<Memory | null> {
  const before = await load(tx, scopeId, id);
  if (before.active || before.validTo) return null;
  const after = await tx.memory.update({
    where: { id },
    data: {
      active: true,
      confidence: Math.min(1, before.confidence + REINFORCE_STEP),
      reinforcementCount: { increment: 1 },
      lastReinforcedAt: origin.now,
      decaySteps: 0,
      lastAccessedAt: origin.now,
    },
  });
  await audit(tx, scopeId, origin, 'revive', id, snapshot(before), snapshot(after));
  return after;
}

/**
 * A correction: the old version stops being true now (validTo, superseded by the new one, kept
 * for "what was true on date X"); the new version carries the content, category and evidence.
 */
export async function supersedeMemory(
  tx: Tx,
  scopeId: string,
  id: string,
  change: { content: string; category?: string; confidence?: number; sourceEpisodeIds?: readonly string[] },
  origin: ChangeOrigin,
): Promise<{ previous: Memory; current: Memory }> {
  const before = await load(tx, scopeId, id);
  if (before.validTo) throw new ValidationError(`memory ${id} was already superseded`, { code: 'memory.superseded' });
  const checked = checkedContent(change.content);
  const evidence = await checkEvidence(tx, scopeId, change.sourceEpisodeIds, origin);
  // A new version stays about whom the old one was (someone else may correct it); a memory
  // without a subject takes the one of its new evidence.
  const speaker = await speakerOfWrite(tx, scopeId, evidence);
  const subject = before.subjectId ? { id: before.subjectId, name: before.subjectName ?? before.subjectId } : speaker.subject;
  const content = speaker.group && subject ? nameTheSubject(checked, subject) : checked;
  const current = await tx.memory.create({
    data: {
      scopeId,
      category: change.category?.trim().toLowerCase() || before.category,
      content,
      subjectId: subject?.id ?? null,
      subjectName: subject?.name ?? null,
      confidence: clamp01(change.confidence ?? Math.max(before.confidence, 0.5)),
      importance: before.importance,
      sourceType: before.sourceType,
      sourceTrust: before.sourceTrust,
      // A pinned memory stays pinned in its new wording: the pin is on what it is about.
      pinned: before.pinned,
      reinforcementCount: 1,
      lastReinforcedAt: origin.now,
      validFrom: origin.now,
      createdAt: origin.now,
    },
  });
  const previous = await tx.memory.update({ where: { id }, data: { active: false, validTo: origin.now, supersededById: current.id } });
  await addSources(tx, scopeId, current.id, evidence);
  await tx.memoryLink.create({
    data: { scopeId, fromId: current.id, toId: id, kind: 'supersedes', reason: cleanReason(origin.reason), createdAt: origin.now },
  });
  await audit(tx, scopeId, origin, 'update', id, snapshot(before), { ...snapshot(previous), supersededBy: snapshot(current) });
  await audit(tx, scopeId, origin, 'create', current.id, null, { ...snapshot(current), supersedes: id });
  return { previous, current };
}

/**
 * Folds a memory into another that says the same (the dreaming phase's merge of restatements):
 * the weaker stops being current (validTo, superseded by the stronger, a `supersedes` link, its
 * own sources kept as history), and the stronger takes its evidence, its confirmations and the
 * higher confidence and importance of the two.
 */
export async function mergeMemories(tx: Tx, scopeId: string, weakerId: string, strongerId: string, origin: ChangeOrigin): Promise<Memory> {
  const weaker = await load(tx, scopeId, weakerId);
  const stronger = await load(tx, scopeId, strongerId);
  if (weaker.validTo || stronger.validTo) throw new ValidationError('only current memories are merged', { code: 'memory.superseded' });
  const sources = await tx.memorySource.findMany({ where: { scopeId, memoryId: weakerId }, select: { episodeId: true } });
  await addSources(
    tx,
    scopeId,
    strongerId,
    sources.map((s) => s.episodeId),
  );
  const after = await tx.memory.update({
    where: { id: strongerId },
    data: {
      reinforcementCount: stronger.reinforcementCount + weaker.reinforcementCount,
      confidence: Math.max(stronger.confidence, weaker.confidence),
      importance: Math.max(stronger.importance, weaker.importance),
      lastReinforcedAt: weaker.lastReinforcedAt > stronger.lastReinforcedAt ? weaker.lastReinforcedAt : stronger.lastReinforcedAt,
      active: true,
      // The memory that holds a pinned one's words is pinned in its place.
      pinned: stronger.pinned || weaker.pinned,
    },
  });
  const folded = await tx.memory.update({ where: { id: weakerId }, data: { active: false, validTo: origin.now, supersededById: strongerId } });
  await tx.memoryLink.upsert({
    where: { fromId_toId_kind: { fromId: strongerId, toId: weakerId, kind: 'supersedes' } },
    create: { scopeId, fromId: strongerId, toId: weakerId, kind: 'supersedes', reason: cleanReason(origin.reason), createdAt: origin.now },
    update: {},
  });
  await audit(tx, scopeId, origin, 'merge', weakerId, snapshot(weaker), { ...snapshot(folded), mergedInto: strongerId });
  await audit(tx, scopeId, origin, 'reinforce', strongerId, snapshot(stronger), { ...snapshot(after), absorbed: weakerId });
  return after;
}

/**
 * Sets a lower confidence; below 0.1 the memory fades (inactive, never deleted). `step` marks a
 * scheduled decay step (counted, so each 30 days without evidence costs one step only).
 */
export async function decayMemory(tx: Tx, scopeId: string, id: string, confidence: number, origin: ChangeOrigin, step = false): Promise<Memory> {
  const before = await load(tx, scopeId, id);
  const next = clamp01(Math.min(before.confidence, confidence));
  const fades = before.active && next < DEACTIVATION_THRESHOLD;
  const after = await tx.memory.update({
    where: { id },
    data: { confidence: next, active: fades ? false : before.active, decaySteps: step ? { increment: 1 } : undefined },
  });
  await audit(tx, scopeId, origin, fades ? 'deactivate' : 'decay', id, snapshot(before), snapshot(after));
  return after;
}

/** A typed edge between two memories of one scope (related, causes, part-of, ...). */
export async function linkMemories(
  tx: Tx,
  scopeId: string,
  fromId: string,
  toId: string,
  kind: string,
  score: number | null,
  origin: ChangeOrigin,
): Promise<boolean> {
  if (fromId === toId) return false;
  await load(tx, scopeId, fromId);
  await load(tx, scopeId, toId);
  const [a, b] = kind === 'related' && fromId > toId ? [toId, fromId] : [fromId, toId];
  const existing = await tx.memoryLink.findUnique({ where: { fromId_toId_kind: { fromId: a, toId: b, kind } } });
  if (existing) return false;
  await tx.memoryLink.create({ data: { scopeId, fromId: a, toId: b, kind, score, reason: cleanReason(origin.reason), createdAt: origin.now } });
  await tx.auditEvent.create({
    data: {
      scopeId,
      runId: origin.runId ?? null,
      action: 'link',
      subjectType: 'memory',
      subjectId: a,
      after: { to: b, kind, score },
      reason: cleanReason(origin.reason),
      createdAt: origin.now,
    },
  });
  return true;
}
