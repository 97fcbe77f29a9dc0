/**
 * What a plan reads the model's answer against: the rows the prompt showed, and the rules that
 * turn a short id the model cited into a real row or refuse it with its reason. Ids have kinds:
 * an operation on an existing memory needs an M-id the prompt showed; evidence, importance and
 * summaries need episodes (an M-id refuses the operation, a bare number is read as an episode);
 * evidence is the person's own words, and a message that tries to instruct the memory system
 * refuses the whole operation that cites it. One memory is changed by one operation at most.
 */
import type { Episode, Memory } from '../../storage/prisma';
import { evidenceProblem, looksLikeInjection, relayedFromOf } from '../../memory/memories/memory-guards';
import { idLabel, refLabel, type IdRef, type ShortIds } from '../../memory/short-ids';
import type { Plan } from './plan';

/** What one prompt showed the model, and what it was asked for. */
export interface PlanInput {
  readonly episodes: readonly Episode[];
  readonly memories: readonly Memory[];
  readonly episodeIds: ShortIds;
  readonly memoryIds: ShortIds;
  /** The person's turns that the relayed notes among `episodes` name, by id (looked up in the scope). */
  readonly relayed?: ReadonlyMap<string, Episode>;
  /** The prompt asked for insights (reflection due); insights in an answer that was not asked are refused. */
  readonly insightsAsked?: boolean;
}

/** The plan being made, the rows it may name, and what it has refused and claimed so far. */
export interface PlanContext {
  readonly input: PlanInput;
  readonly plan: Plan;
  readonly episodeById: ReadonlyMap<string, Episode>;
  readonly memoryById: ReadonlyMap<string, Memory>;
  /** The memories the prompt showed, by their normalized text (a "new" one that restates one reinforces it). */
  readonly known: ReadonlyMap<string, Memory>;
  /** Memories already changed by an operation of this answer. */
  readonly touched: Set<string>;
  /** Normalized texts of the memories this answer creates (new ones and insights). */
  readonly seenNew: Set<string>;
}

/** A memory's text as compared for sameness: lower case, punctuation and spacing folded. */
export function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** An empty plan for the episodes `episodeIds`. */
export function emptyPlan(episodeIds: string[]): Plan {
  return {
    create: [],
    reinforce: [],
    update: [],
    contradict: [],
    decay: [],
    connect: [],
    importance: [],
    summaries: [],
    entities: [],
    metadata: [],
    insights: [],
    episodeIds,
    rejected: [],
  };
}

/** The context of a plan for what one prompt showed. */
export function createPlanContext(input: PlanInput): PlanContext {
  return {
    input,
    plan: emptyPlan(input.episodes.map((e) => e.id)),
    episodeById: new Map(input.episodes.map((e) => [e.id, e])),
    memoryById: new Map(input.memories.map((m) => [m.id, m])),
    known: new Map(input.memories.map((m) => [normalized(m.content), m])),
    touched: new Set(),
    seenNew: new Set(),
  };
}

/** Records that `operation` is refused (or partly ignored) and why. */
export function reject(ctx: PlanContext, operation: string, reason: string): void {
  ctx.plan.rejected.push({ operation, reason });
}

/**
 * The person's own episodes among the cited ones; notes invented and agent citations. Null when
 * the operation cites a message that tries to instruct the memory system: the whole operation
 * is refused (it is recorded here; callers skip it).
 */
export function evidence(ctx: PlanContext, operation: string, refs: readonly IdRef[]): string[] | null {
  const memoryRef = refs.find((r) => r.kind === 'M');
  if (memoryRef) {
    reject(
      ctx,
      operation,
      `cites ${refLabel(memoryRef)} as evidence, but M-ids name memories and evidence is episodes (E-ids); the whole operation is refused`,
    );
    return null;
  }
  const out: string[] = [];
  const shorts = refs.map((r) => r.n);
  for (const s of shorts) {
    const id = ctx.input.episodeIds.real(s);
    const episode = id ? ctx.episodeById.get(id) : undefined;
    if (episode && looksLikeInjection(episode.content)) {
      reject(ctx, operation, `cites episode ${idLabel('E', s)}, which tries to instruct the memory system (the whole operation is refused)`);
      return null;
    }
  }
  for (const s of shorts) {
    const id = ctx.input.episodeIds.real(s);
    const episode = id ? ctx.episodeById.get(id) : undefined;
    if (!episode) {
      reject(ctx, operation, `cites episode ${idLabel('E', s)}, which was not in the prompt (invented id ignored)`);
      continue;
    }
    const relayedFrom = relayedFromOf(episode);
    const problem = evidenceProblem(episode, relayedFrom ? ctx.input.relayed?.get(relayedFrom) : undefined);
    if (problem) reject(ctx, operation, `cites episode ${idLabel('E', s)}, which ${problem} (not evidence; ignored)`);
    else if (!out.includes(episode.id)) out.push(episode.id);
  }
  return out;
}

/** The existing memory an operation names: only an M-id the prompt showed. */
export function memoryOf(ctx: PlanContext, operation: string, ref: IdRef): Memory | undefined {
  if (ref.kind === 'E') {
    reject(ctx, operation, `names ${refLabel(ref)} as its memory, but E-ids name episodes and memories are M-ids; refused, no memory changed`);
    return undefined;
  }
  if (ref.kind === null) {
    reject(
      ctx,
      operation,
      `names memory "${ref.n}" without its kind; memories are M-ids (M${ref.n}) and a bare number may be an episode's; refused, no memory changed`,
    );
    return undefined;
  }
  const id = ctx.input.memoryIds.real(ref.n);
  const memory = id ? ctx.memoryById.get(id) : undefined;
  if (!memory) reject(ctx, operation, `names memory ${refLabel(ref)}, which was not in the prompt (invented id; not applied)`);
  return memory;
}

/** The episode an importance score or summary is about: an E-id (or a bare number) the prompt showed. */
export function episodeOf(ctx: PlanContext, operation: string, ref: IdRef): string | undefined {
  if (ref.kind === 'M') {
    reject(ctx, operation, `names ${refLabel(ref)} as its episode, but M-ids name memories and episodes are E-ids; refused`);
    return undefined;
  }
  const id = ctx.input.episodeIds.real(ref.n);
  if (!id || !ctx.episodeById.has(id)) {
    reject(ctx, operation, `episode ${idLabel('E', ref.n)} was not in the prompt`);
    return undefined;
  }
  return id;
}

/** Claims `memory` for `operation`; false (and refused) when another operation of this answer changed it. */
export function claim(ctx: PlanContext, operation: string, memory: Memory): boolean {
  if (ctx.touched.has(memory.id)) {
    reject(ctx, operation, `memory ${idLabel('M', ctx.input.memoryIds.short(memory.id) ?? 0)} already changed by another operation in this answer`);
    return false;
  }
  ctx.touched.add(memory.id);
  return true;
}
