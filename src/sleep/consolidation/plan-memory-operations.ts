/**
 * The operations of an answer that change memories, planned: updates and contradictions first
 * (they claim their memory before a reinforce or decay can), then reinforcements, decays, new
 * memories (one that restates a shown memory reinforces it instead), links, and reflection's
 * insights. A memory planned from an answer is held to the memory rules (memory-guards.ts) here,
 * so one bad operation is dropped with its reason; an inference never starts confident, and what
 * is learned only from notes relaying the person is "observed", not "stated".
 */
import type { SourceType } from '../../memory/memories/memory-writer';
import { contentProblem as guardProblem, isRelayedNote } from '../../memory/memories/memory-guards';
import { refLabel } from '../../memory/short-ids';
import type { ConsolidationAnswer } from './operations';
import type { PlannedMemory } from './plan';
import { claim, evidence, memoryOf, normalized, reject, type PlanContext } from './plan-context';

/** Inferences never start confident (seed 000: lower confidence for inferred information). */
export const INFERRED_CONFIDENCE_CAP = 0.6;
/**
 * The confidence of a new memory whose answer left it out: the low end of what the prompt asks
 * for that source. A repair turn would re-send the whole prompt for one missing number (in the
 * memory bench a 60-episode answer almost always lacked one: half its calls were repair turns).
 */
export const DEFAULT_CONFIDENCE: Readonly<Record<SourceType, number>> = { stated: 0.8, observed: 0.6, inferred: 0.5 };
/** Insights one reflection may add (seed 003: "at most three"). */
export const MAX_INSIGHTS = 3;
/** Importance of an insight memory (a pattern across many episodes weighs more than one of them). */
const INSIGHT_IMPORTANCE = 0.7;

/** Why `content` may not be stored as a memory, if it may not. */
export function contentProblem(content: string): string | undefined {
  return guardProblem(content)?.reason;
}

/** A memory to create from an answer's statement; undefined (refused) when it breaks a rule or has no evidence. */
function planned(
  ctx: PlanContext,
  operation: string,
  raw: { category: string; content: string; confidence: number; source: SourceType; importance?: number },
  sources: string[],
): PlannedMemory | undefined {
  const problem = contentProblem(raw.content);
  if (problem) {
    reject(ctx, operation, `"${raw.content.slice(0, 80)}" ${problem}`);
    return undefined;
  }
  if (sources.length === 0) {
    reject(ctx, operation, `"${raw.content.slice(0, 80)}" has no evidence from the person's own turns; not stored`);
    return undefined;
  }
  const confidence = raw.source === 'inferred' ? Math.min(raw.confidence, INFERRED_CONFIDENCE_CAP) : raw.confidence;
  // Learned only from notes relaying the person: observed (the agent's wording), never stated.
  const onlyRelayed = () => sources.every((id) => isRelayedNote(ctx.episodeById.get(id)!));
  const sourceType = raw.source === 'stated' && onlyRelayed() ? 'observed' : raw.source;
  return { category: raw.category, content: raw.content, confidence, importance: raw.importance ?? 0.5, sourceType, sourceEpisodeIds: sources };
}

/** Updates, contradictions, reinforcements and decays of the memories the prompt showed. */
export function planExistingMemories(ctx: PlanContext, answer: ConsolidationAnswer): void {
  const { plan, touched } = ctx;
  // Updates and contradictions first: they claim their memory before a reinforce or decay can.
  for (const op of answer.update) {
    const memory = memoryOf(ctx, 'update', op.memory);
    if (!memory) continue;
    const sources = evidence(ctx, 'update', op.episodes);
    if (sources === null) continue;
    const problem = contentProblem(op.content);
    if (problem) reject(ctx, 'update', `"${op.content.slice(0, 80)}" ${problem}`);
    else if (sources.length === 0) reject(ctx, 'update', `memory ${refLabel(op.memory)}: no evidence from the person's own turns; not changed`);
    else if (normalized(op.content) === normalized(memory.content)) {
      plan.reinforce.push({ memoryId: memory.id, sourceEpisodeIds: sources, reason: op.reason || 'restated' });
      touched.add(memory.id);
    } else if (claim(ctx, 'update', memory)) plan.update.push({ memoryId: memory.id, content: op.content, sourceEpisodeIds: sources, reason: op.reason });
  }
  for (const op of answer.contradict) {
    const memory = memoryOf(ctx, 'contradict', op.memory);
    if (!memory) continue;
    const sources = evidence(ctx, 'contradict', op.episodes);
    if (sources === null) continue;
    const statement = planned(ctx, 'contradict', { category: memory.category, content: op.content, confidence: 0.7, source: 'stated' }, sources);
    if (statement && claim(ctx, 'contradict', memory)) plan.contradict.push({ memoryId: memory.id, statement, reason: op.reason });
  }
  for (const op of answer.reinforce) {
    const memory = memoryOf(ctx, 'reinforce', op.memory);
    if (!memory) continue;
    const sources = evidence(ctx, 'reinforce', op.episodes);
    if (sources === null) continue;
    if (sources.length === 0)
      reject(ctx, 'reinforce', `memory ${refLabel(op.memory)}: no evidence from the person's own turns (reinforcement needs new evidence)`);
    else if (claim(ctx, 'reinforce', memory)) plan.reinforce.push({ memoryId: memory.id, sourceEpisodeIds: sources, reason: op.reason });
  }
  for (const op of answer.decay) {
    const memory = memoryOf(ctx, 'decay', op.memory);
    if (!memory) continue;
    if (op.confidence >= memory.confidence)
      reject(ctx, 'decay', `memory ${refLabel(op.memory)}: decay to ${op.confidence} is not lower than ${memory.confidence.toFixed(2)}`);
    else if (claim(ctx, 'decay', memory)) plan.decay.push({ memoryId: memory.id, confidence: op.confidence, reason: op.reason });
  }
}

/** New memories (a restatement of a shown one reinforces it instead) and links between shown memories. */
export function planNewMemories(ctx: PlanContext, answer: ConsolidationAnswer): void {
  const { plan, touched, seenNew } = ctx;
  for (const op of answer.new) {
    const key = normalized(op.content);
    const existing = ctx.known.get(key);
    const sources = evidence(ctx, 'new', op.episodes);
    if (sources === null) continue;
    if (existing) {
      if (sources.length > 0 && !touched.has(existing.id)) {
        touched.add(existing.id);
        plan.reinforce.push({ memoryId: existing.id, sourceEpisodeIds: sources, reason: 'stated again' });
      }
      continue;
    }
    if (seenNew.has(key)) {
      reject(ctx, 'new', `"${op.content.slice(0, 80)}" appears twice in the answer`);
      continue;
    }
    const memory = planned(ctx, 'new', { ...op, confidence: op.confidence ?? DEFAULT_CONFIDENCE[op.source] }, sources);
    if (memory) {
      seenNew.add(key);
      plan.create.push(memory);
    }
  }
  for (const op of answer.connect) {
    const a = memoryOf(ctx, 'connect', op.a);
    const b = memoryOf(ctx, 'connect', op.b);
    if (a && b && a.id !== b.id) plan.connect.push({ fromId: a.id, toId: b.id, relationship: op.relationship });
  }
}

/**
 * Reflection (seed 003): insights are inferences held to every rule a new memory is, and they
 * never restate a memory already known (shown in the prompt) or learned in this answer.
 */
export function planInsights(ctx: PlanContext, answer: ConsolidationAnswer): void {
  for (const [i, op] of answer.insights.entries()) {
    if (!ctx.input.insightsAsked) {
      reject(ctx, 'insight', `"${op.content.slice(0, 80)}" was not asked for (reflection is not due); not stored`);
      continue;
    }
    if (i >= MAX_INSIGHTS) {
      reject(ctx, 'insight', `"${op.content.slice(0, 80)}" is beyond the ${MAX_INSIGHTS} insights a reflection may add`);
      continue;
    }
    const sources = evidence(ctx, 'insight', op.episodes);
    if (sources === null) continue;
    const key = normalized(op.content);
    if (ctx.known.has(key) || ctx.seenNew.has(key)) {
      reject(ctx, 'insight', `"${op.content.slice(0, 80)}" restates a known memory; not stored again`);
      continue;
    }
    const insight = planned(
      ctx,
      'insight',
      { category: 'insight', content: op.content, confidence: op.confidence, source: 'inferred', importance: INSIGHT_IMPORTANCE },
      sources,
    );
    if (insight) {
      ctx.seenNew.add(key);
      ctx.plan.insights.push(insight);
    }
  }
}
