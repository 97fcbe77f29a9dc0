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
 */
import type { Episode, Memory } from '../../storage/prisma';
import type { SourceType } from '../../memory/memories/memory-writer';
import { contentProblem as guardProblem, evidenceProblem, isRelayedNote, looksLikeInjection, relayedFromOf } from '../../memory/memories/memory-guards';
import type { ConsolidationAnswer } from './operations';
import { idLabel, refLabel, type IdRef, type ShortIds } from '../../memory/short-ids';
import type { Neighbour } from '../../memory/memories/restatements';
import type { LearnedEpisodeMetadata } from '../../memory/episodes/episode-metadata';

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

function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

export function makePlan(params: {
  readonly answer: ConsolidationAnswer;
  readonly episodes: readonly Episode[];
  readonly memories: readonly Memory[];
  readonly episodeIds: ShortIds;
  readonly memoryIds: ShortIds;
  /** The person's turns that the relayed notes among `episodes` name, by id (looked up in the scope). */
  readonly relayed?: ReadonlyMap<string, Episode>;
  /** The prompt asked for insights (reflection due); insights in an answer that was not asked are refused. */
  readonly insightsAsked?: boolean;
}): Plan {
  const { answer } = params;
  const episodeById = new Map(params.episodes.map((e) => [e.id, e]));
  const memoryById = new Map(params.memories.map((m) => [m.id, m]));
  const rejected: Plan['rejected'] = [];
  const reject = (operation: string, reason: string) => rejected.push({ operation, reason });

  /**
   * The person's own episodes among the cited ones; notes invented and agent citations. Null when
   * the operation cites a message that tries to instruct the memory system: the whole operation
   * is refused (it is recorded here; callers skip it).
   */
  const evidence = (operation: string, refs: readonly IdRef[]): string[] | null => {
    const memoryRef = refs.find((r) => r.kind === 'M');
    if (memoryRef) {
      reject(operation, `cites ${refLabel(memoryRef)} as evidence, but M-ids name memories and evidence is episodes (E-ids); the whole operation is refused`);
      return null;
    }
    const out: string[] = [];
    const shorts = refs.map((r) => r.n);
    for (const s of shorts) {
      const id = params.episodeIds.real(s);
      const episode = id ? episodeById.get(id) : undefined;
      if (episode && looksLikeInjection(episode.content)) {
        reject(operation, `cites episode ${idLabel('E', s)}, which tries to instruct the memory system (the whole operation is refused)`);
        return null;
      }
    }
    for (const s of shorts) {
      const id = params.episodeIds.real(s);
      const episode = id ? episodeById.get(id) : undefined;
      if (!episode) {
        reject(operation, `cites episode ${idLabel('E', s)}, which was not in the prompt (invented id ignored)`);
        continue;
      }
      const relayedFrom = relayedFromOf(episode);
      const problem = evidenceProblem(episode, relayedFrom ? params.relayed?.get(relayedFrom) : undefined);
      if (problem) reject(operation, `cites episode ${idLabel('E', s)}, which ${problem} (not evidence; ignored)`);
      else if (!out.includes(episode.id)) out.push(episode.id);
    }
    return out;
  };
  /** The existing memory an operation names: only an M-id the prompt showed (issue 15). */
  const memoryOf = (operation: string, ref: IdRef): Memory | undefined => {
    if (ref.kind === 'E') {
      reject(operation, `names ${refLabel(ref)} as its memory, but E-ids name episodes and memories are M-ids; refused, no memory changed`);
      return undefined;
    }
    if (ref.kind === null) {
      reject(
        operation,
        `names memory "${ref.n}" without its kind; memories are M-ids (M${ref.n}) and a bare number may be an episode's; refused, no memory changed`,
      );
      return undefined;
    }
    const id = params.memoryIds.real(ref.n);
    const memory = id ? memoryById.get(id) : undefined;
    if (!memory) reject(operation, `names memory ${refLabel(ref)}, which was not in the prompt (invented id; not applied)`);
    return memory;
  };
  /** The episode an importance score or summary is about: an E-id (or a bare number) the prompt showed. */
  const episodeOf = (operation: string, ref: IdRef): string | undefined => {
    if (ref.kind === 'M') {
      reject(operation, `names ${refLabel(ref)} as its episode, but M-ids name memories and episodes are E-ids; refused`);
      return undefined;
    }
    const id = params.episodeIds.real(ref.n);
    if (!id || !episodeById.has(id)) {
      reject(operation, `episode ${idLabel('E', ref.n)} was not in the prompt`);
      return undefined;
    }
    return id;
  };
  const contentProblem = (content: string): string | undefined => guardProblem(content)?.reason;
  /** Learned only from notes relaying the person: observed (the agent's wording), never stated. */
  const onlyRelayed = (sources: readonly string[]) => sources.every((id) => isRelayedNote(episodeById.get(id)!));

  const touched = new Set<string>();
  const claim = (operation: string, memory: Memory): boolean => {
    if (touched.has(memory.id)) {
      reject(operation, `memory ${idLabel('M', params.memoryIds.short(memory.id) ?? 0)} already changed by another operation in this answer`);
      return false;
    }
    touched.add(memory.id);
    return true;
  };

  const known = new Map(params.memories.map((m) => [normalized(m.content), m]));
  const plan: Plan = {
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
    episodeIds: params.episodes.map((e) => e.id),
    rejected,
  };

  const planned = (
    operation: string,
    raw: { category: string; content: string; confidence: number; source: SourceType; importance?: number },
    sources: string[],
  ): PlannedMemory | undefined => {
    const problem = contentProblem(raw.content);
    if (problem) {
      reject(operation, `"${raw.content.slice(0, 80)}" ${problem}`);
      return undefined;
    }
    if (sources.length === 0) {
      reject(operation, `"${raw.content.slice(0, 80)}" has no evidence from the person's own turns; not stored`);
      return undefined;
    }
    const confidence = raw.source === 'inferred' ? Math.min(raw.confidence, INFERRED_CONFIDENCE_CAP) : raw.confidence;
    const sourceType = raw.source === 'stated' && onlyRelayed(sources) ? 'observed' : raw.source;
    return { category: raw.category, content: raw.content, confidence, importance: raw.importance ?? 0.5, sourceType, sourceEpisodeIds: sources };
  };

  // Updates and contradictions first: they claim their memory before a reinforce or decay can.
  for (const op of answer.update) {
    const memory = memoryOf('update', op.memory);
    if (!memory) continue;
    const sources = evidence('update', op.episodes);
    if (sources === null) continue;
    const problem = contentProblem(op.content);
    if (problem) reject('update', `"${op.content.slice(0, 80)}" ${problem}`);
    else if (sources.length === 0) reject('update', `memory ${refLabel(op.memory)}: no evidence from the person's own turns; not changed`);
    else if (normalized(op.content) === normalized(memory.content))
      plan.reinforce.push({ memoryId: memory.id, sourceEpisodeIds: sources, reason: op.reason || 'restated' }), touched.add(memory.id);
    else if (claim('update', memory)) plan.update.push({ memoryId: memory.id, content: op.content, sourceEpisodeIds: sources, reason: op.reason });
  }
  for (const op of answer.contradict) {
    const memory = memoryOf('contradict', op.memory);
    if (!memory) continue;
    const sources = evidence('contradict', op.episodes);
    if (sources === null) continue;
    const statement = planned('contradict', { category: memory.category, content: op.content, confidence: 0.7, source: 'stated' }, sources);
    if (statement && claim('contradict', memory)) plan.contradict.push({ memoryId: memory.id, statement, reason: op.reason });
  }
  for (const op of answer.reinforce) {
    const memory = memoryOf('reinforce', op.memory);
    if (!memory) continue;
    const sources = evidence('reinforce', op.episodes);
    if (sources === null) continue;
    if (sources.length === 0) reject('reinforce', `memory ${refLabel(op.memory)}: no evidence from the person's own turns (reinforcement needs new evidence)`);
    else if (claim('reinforce', memory)) plan.reinforce.push({ memoryId: memory.id, sourceEpisodeIds: sources, reason: op.reason });
  }
  for (const op of answer.decay) {
    const memory = memoryOf('decay', op.memory);
    if (!memory) continue;
    if (op.confidence >= memory.confidence)
      reject('decay', `memory ${refLabel(op.memory)}: decay to ${op.confidence} is not lower than ${memory.confidence.toFixed(2)}`);
    else if (claim('decay', memory)) plan.decay.push({ memoryId: memory.id, confidence: op.confidence, reason: op.reason });
  }
  const seenNew = new Set<string>();
  for (const op of answer.new) {
    const key = normalized(op.content);
    const existing = known.get(key);
    const sources = evidence('new', op.episodes);
    if (sources === null) continue;
    if (existing) {
      if (sources.length > 0 && !touched.has(existing.id)) {
        touched.add(existing.id);
        plan.reinforce.push({ memoryId: existing.id, sourceEpisodeIds: sources, reason: 'stated again' });
      }
      continue;
    }
    if (seenNew.has(key)) {
      reject('new', `"${op.content.slice(0, 80)}" appears twice in the answer`);
      continue;
    }
    const memory = planned('new', { ...op, confidence: op.confidence ?? DEFAULT_CONFIDENCE[op.source] }, sources);
    if (memory) {
      seenNew.add(key);
      plan.create.push(memory);
    }
  }
  for (const op of answer.connect) {
    const a = memoryOf('connect', op.a);
    const b = memoryOf('connect', op.b);
    if (a && b && a.id !== b.id) plan.connect.push({ fromId: a.id, toId: b.id, relationship: op.relationship });
  }
  for (const op of answer.importance) {
    const id = episodeOf('importance', op.episode);
    if (!id) continue;
    plan.importance.push({ episodeId: id, score: op.score });
    // The episode's metadata rides on its importance entry; a withheld message (an injection
    // attempt, never shown to the model) gets none.
    const { topics, entities, emotionalTone, taskType } = op;
    const described = topics.length + entities.length > 0 || emotionalTone !== undefined || taskType !== undefined;
    if (described && !looksLikeInjection(episodeById.get(id)!.content)) plan.metadata!.push({ episodeId: id, topics, entities, emotionalTone, taskType });
  }
  for (const op of answer.summaries) {
    const id = episodeOf('summaries', op.episode);
    const label = idLabel('E', op.episode.n);
    if (!id) continue;
    if (looksLikeInjection(episodeById.get(id)!.content))
      reject('summaries', `episode ${label} tries to instruct the memory system; its summary is not stored`);
    else if (looksLikeInjection(op.summary)) reject('summaries', `summary of episode ${label} reads as an instruction; not stored`);
    else plan.summaries.push({ episodeId: id, summary: op.summary });
  }
  for (const op of answer.entities) {
    const episodeIds = evidence('entities', op.episodes);
    if (episodeIds === null) continue;
    const observations = op.observations.filter((o) => {
      const problem = contentProblem(o);
      if (problem) reject('entities', `observation about ${op.name} ${problem}`);
      return !problem;
    });
    if (looksLikeInjection(op.name)) reject('entities', 'an entity name reads as an instruction; not stored');
    else if (episodeIds.length === 0) reject('entities', `${op.name}: no evidence from the person's own turns`);
    else
      plan.entities.push({
        name: op.name,
        kind: op.kind,
        observations,
        favorability: op.favorability ?? 0,
        episodeIds,
        aliases: op.aliases.filter((a) => !looksLikeInjection(a)),
        ...(op.relation && !looksLikeInjection(op.relation) ? { relation: op.relation } : {}),
      });
  }
  // Reflection (seed 003): insights are inferences held to every rule a new memory is, and they
  // never restate a memory already known (shown in the prompt) or learned in this answer.
  for (const [i, op] of answer.insights.entries()) {
    if (!params.insightsAsked) {
      reject('insight', `"${op.content.slice(0, 80)}" was not asked for (reflection is not due); not stored`);
      continue;
    }
    if (i >= MAX_INSIGHTS) {
      reject('insight', `"${op.content.slice(0, 80)}" is beyond the ${MAX_INSIGHTS} insights a reflection may add`);
      continue;
    }
    const sources = evidence('insight', op.episodes);
    if (sources === null) continue;
    const key = normalized(op.content);
    if (known.has(key) || seenNew.has(key)) {
      reject('insight', `"${op.content.slice(0, 80)}" restates a known memory; not stored again`);
      continue;
    }
    const insight = planned(
      'insight',
      { category: 'insight', content: op.content, confidence: op.confidence, source: 'inferred', importance: INSIGHT_IMPORTANCE },
      sources,
    );
    if (insight) {
      seenNew.add(key);
      plan.insights.push(insight);
    }
  }
  return plan;
}

/**
 * One plan from the plans of a batch's prompts, so the whole batch is applied in one
 * transaction. A memory changed by an earlier prompt's plan is not changed again by a later one
 * (the later operation is rejected with its reason), and a new memory stated twice is kept once.
 */
export function mergePlans(plans: readonly Plan[]): Plan {
  if (plans.length === 1) return plans[0]!;
  const merged: Plan = {
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
    episodeIds: [],
    rejected: [],
  };
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
