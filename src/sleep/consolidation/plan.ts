/**
 * Turns the model's answer into a plan of concrete changes, mapping short ids back to real ones
 * and rejecting what must never be applied: ids the prompt did not show (invented), evidence that
 * is not the person's own words (seed 003 persona protection), statements about the assistant,
 * text that reads as an instruction (prompt injection), duplicates, and conflicting operations on
 * one memory. Every rejection is kept with its reason for the log, the dry run and the run stats.
 *
 * Ids have kinds (issue 15): memories are `M…`, episodes `E…`. An operation that names an
 * existing memory (reinforce, update, contradict, decay, connect) needs an M-id: an E-id there,
 * or a bare number (which could be either, both counts start at 1), refuses the operation, so an
 * episode number never edits the memory that happens to share it. Where episodes are expected
 * (evidence lists, importance, summaries) an M-id refuses the operation as a whole (the model
 * mixed up what it cites), while a bare number is read as an episode: the field can only hold
 * episodes, and the evidence rules still check every episode it resolves to.
 *
 * Prompt injection is refused twice over: the text of a message that reads as an instruction to
 * the memory system is withheld from every model that writes memories (`shownToModel`), and
 * an operation that cites such a message is refused as a whole, even when it cites harmless ones
 * too: a claim the model took from an injection attempt does not become true because it also
 * named a neighbouring message.
 *
 * The rules themselves are the memory domain's (memory-guards.ts), which the writer enforces
 * again on every write; the plan applies them first so that one bad operation is dropped with its
 * reason instead of failing the whole batch's transaction. An agent note that relays the person's
 * words (`memory_save`, marked `relayedFrom`) is evidence when the turn it relays exists
 * (`relayed`); what is learned only from such notes is "observed", not "stated".
 *
 * This file owns the plan's shape and its order; the rules live beside it: reading the answer's
 * ids against the prompt (`plan-context.ts`), the operations on memories (`plan-memory-operations.ts`)
 * and those on episodes and entities (`plan-episode-operations.ts`).
 */
import type { SourceType } from '../../memory/memories/memory-writer';
import type { ConsolidationAnswer } from './operations';
import type { Neighbour } from '../../memory/memories/restatements';
import type { LearnedEpisodeMetadata } from '../../memory/episodes/episode-metadata';
import { createPlanContext, emptyPlan, normalized, type PlanInput } from './plan-context';
import { planEntities, planEpisodeNotes } from './plan-episode-operations';
import { planExistingMemories, planInsights, planNewMemories } from './plan-memory-operations';

export { DEFAULT_CONFIDENCE, INFERRED_CONFIDENCE_CAP, MAX_INSIGHTS } from './plan-memory-operations';

export interface PlannedMemory {
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  readonly importance: number;
  readonly sourceType: SourceType;
  readonly sourceEpisodeIds: string[];
  /** Current memories near it by meaning, found before the transaction (the writer's restatement rule). */
  readonly neighbours?: readonly Neighbour[];
}

export interface Plan {
  readonly create: PlannedMemory[];
  readonly reinforce: Array<{ memoryId: string; sourceEpisodeIds: string[]; reason: string }>;
  readonly update: Array<{ memoryId: string; content: string; sourceEpisodeIds: string[]; reason: string }>;
  readonly contradict: Array<{ memoryId: string; statement: PlannedMemory; reason: string }>;
  readonly decay: Array<{ memoryId: string; confidence: number; reason: string }>;
  readonly connect: Array<{ fromId: string; toId: string; relationship: string }>;
  readonly importance: Array<{ episodeId: string; score: number }>;
  readonly summaries: Array<{ episodeId: string; summary: string }>;
  readonly entities: Array<{
    name: string;
    kind: string;
    observations: string[];
    favorability: number;
    episodeIds: string[];
    aliases?: string[];
    /** How a person is related to the owner ("husband"), stored as the entity's `relation` attribute. */
    relation?: string;
  }>;
  /**
   * What each episode is about (topics, entities, tone, task type), written to its row with the
   * batch. Optional: a plan made elsewhere (a test's, an older caller's) simply describes nothing.
   */
  readonly metadata?: LearnedEpisodeMetadata[];
  /** Reflection's insights (category "insight", inferred, confidence capped), when the prompt asked for them. */
  readonly insights: PlannedMemory[];
  /** Every episode the prompt showed: marked consolidated when the plan is applied. */
  readonly episodeIds: string[];
  readonly rejected: Array<{ operation: string; reason: string }>;
}

/**
 * The plan of one answer to one prompt: each operation resolved against what the prompt showed,
 * or refused with its reason. The order matters: updates and contradictions claim their memory
 * before a reinforce or decay can, and insights never restate what the answer already learned.
 */
export function makePlan(params: PlanInput & { readonly answer: ConsolidationAnswer }): Plan {
  const { answer } = params;
  const ctx = createPlanContext(params);
  planExistingMemories(ctx, answer);
  planNewMemories(ctx, answer);
  planEpisodeNotes(ctx, answer);
  planEntities(ctx, answer);
  planInsights(ctx, answer);
  return ctx.plan;
}

/**
 * One plan from the plans of a batch's prompts, so the whole batch is applied in one
 * transaction. A memory changed by an earlier prompt's plan is not changed again by a later one
 * (the later operation is rejected with its reason), and a new memory stated twice is kept once.
 */
export function mergePlans(plans: readonly Plan[]): Plan {
  if (plans.length === 1) return plans[0]!;
  const merged = emptyPlan([]);
  const claimed = new Set<string>();
  const created = new Set<string>();
  const claim = (operation: string, id: string): boolean => {
    if (claimed.has(id)) {
      merged.rejected.push({ operation, reason: 'memory already changed by an earlier part of this batch' });
      return false;
    }
    claimed.add(id);
    return true;
  };
  for (const plan of plans) {
    for (const u of plan.update) if (claim('update', u.memoryId)) merged.update.push(u);
    for (const c of plan.contradict) if (claim('contradict', c.memoryId)) merged.contradict.push(c);
    for (const r of plan.reinforce) if (claim('reinforce', r.memoryId)) merged.reinforce.push(r);
    for (const d of plan.decay) if (claim('decay', d.memoryId)) merged.decay.push(d);
    for (const m of plan.create) {
      const key = normalized(m.content);
      if (created.has(key)) merged.rejected.push({ operation: 'new', reason: `"${m.content.slice(0, 80)}" was already learned in this batch` });
      else created.add(key), merged.create.push(m);
    }
    merged.connect.push(...plan.connect.filter((c) => !claimed.has(c.fromId) && !claimed.has(c.toId)));
    merged.importance.push(...plan.importance);
    merged.summaries.push(...plan.summaries);
    merged.entities.push(...plan.entities);
    merged.metadata!.push(...(plan.metadata ?? []));
    merged.insights.push(...plan.insights);
    merged.episodeIds.push(...plan.episodeIds);
    merged.rejected.push(...plan.rejected);
  }
  return merged;
}
