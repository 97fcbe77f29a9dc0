/**
 * Consolidation of one scope (seed 000 steps 1-3): gather up to 100 unconsolidated episodes,
 * oldest first; group and pack them into coherent prompts; give the model each prompt with the
 * memories relevant to it (retrieved, not all); turn its answers into one plan; apply the whole
 * batch in one transaction; then write the new memories' vectors.
 *
 * Failure applies nothing: a model error, a timeout or an answer still invalid after one repair
 * leaves every episode of the batch unconsolidated with one more attempt counted; they are
 * retried on a later run (with backoff, up to a cap). An answer that teaches nothing is asked
 * again in halves in the same run, once, before its episodes are left for a later run.
 */
import { completeStructured, isCutOff } from '../../llm/structured';
import { LlmError, type LanguageModel, type LlmResponse } from '../../llm/language-model';
import type { Embedder } from '../../memory/embeddings/embedder';
import type { HybridSearch } from '../../memory/retrieval/hybrid-search';
import type { VectorIndex } from '../../memory/vectors/vector-index';
import type { Logger } from '../../shared/logger';
import type { Episode, Memory, PrismaClient } from '../../storage/prisma';
import { looksLikeInjection, relayedFromOf } from '../../memory/memories/memory-guards';
import { applyPlan, type AppliedPlan } from './apply-plan';
import { DEFAULT_PACKING, groupEpisodes, halveGroups, packGroups, packingFor, splitForAttempts, type PackingLimits } from './grouping';
import { consolidationAnswerSchema, type ConsolidationAnswer } from './operations';
import { makePlan, mergePlans, type Plan } from './plan';
import { buildConsolidationPrompt, CONSOLIDATION_SYSTEM_PROMPT, type PromptEpisodeGroup } from './prompt';
import { ShortIds } from '../../memory/short-ids';
import { GAVE_UP_ACTION } from '../../memory/digests/digest';
import { estimateRequestTokens, isBudgetError } from '../token-budget';
import { resolveRelativeDates } from '../../shared/relative-dates';
import { findNeighbours } from '../../memory/memories/restatements';
import { plural } from '../../shared/plural';
import { recordReflection, reflectionDue } from '../reflection';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, eligibleEpisodes, scopeTimeZone } from '../../memory/scopes/scope-policy';

export interface ConsolidatorOptions {
  /** Episodes gathered per batch (seed 000: 100). */
  readonly batchSize: number;
  /** Episodes that failed this many times are left alone (reported by the scheduler). */
  readonly maxAttempts: number;
  /** Relevant memories shown per prompt. */
  readonly memoriesPerPrompt: number;
  readonly packing: PackingLimits;
  /** Largest answer the model may write. */
  readonly maxAnswerTokens: number;
  /** The zone episode times are shown in for scopes that name none (TZ); absent: UTC. */
  readonly defaultTimeZone?: string;
}

export const DEFAULT_CONSOLIDATOR_OPTIONS: ConsolidatorOptions = {
  batchSize: 100,
  maxAttempts: DEFAULT_CONSOLIDATION_ATTEMPTS,
  memoriesPerPrompt: 30,
  packing: DEFAULT_PACKING,
  maxAnswerTokens: 4096,
};

export interface BatchRequest {
  readonly scopeId: string;
  readonly runId: string;
  readonly now: Date;
  readonly dryRun?: boolean;
  /** Tokens the scope may still spend; prompts beyond it wait for another day. */
  readonly tokenBudgetLeft?: number;
  /**
   * The model for this batch, when not the consolidator's own: the sleep job passes its
   * budget-checked model (sleep/token-budget.ts), so a repair turn that would not fit is not sent.
   */
  readonly llm?: LanguageModel;
}

export interface BatchResult {
  /** `empty`: nothing to do; `deferred`: the budget ran out before the first prompt. */
  readonly status: 'applied' | 'planned' | 'empty' | 'deferred' | 'failed';
  readonly episodeCount: number;
  readonly plan?: Plan;
  readonly applied?: AppliedPlan;
  readonly responses: readonly LlmResponse[];
  readonly error?: unknown;
  /** Episodes left for another run because the budget ran out part way. */
  readonly leftOver: number;
  /** Episodes whose answers could not be used (see {@link answerProblem}): retried on a later run. */
  readonly retryLater?: number;
  /** What the planner refused in answers that could not be used (the plan holds the rest). */
  readonly refused?: Plan['rejected'];
  /** Reflection was due and rode on this batch's call (its insights are in `applied.counts.insights`). */
  readonly reflected?: { readonly accumulated: number };
  /** Short ids and rows of what the prompts showed, for the dry-run diff. */
  readonly shown: { readonly episodes: readonly Episode[]; readonly memories: readonly Memory[] };
}

export interface Consolidator {
  consolidateBatch(request: BatchRequest): Promise<BatchResult>;
  /** Unconsolidated episodes still eligible (attempts below the cap). */
  pendingCount(scopeId: string): Promise<number>;
}

/** A person's turn with at least this many words may hold something worth learning. */
const SUBSTANTIVE_WORDS = 4;

/**
 * Why an answer that learned nothing cannot be trusted to mean "nothing to learn", or undefined
 * when it can. A weak model answers `{}` or cites only what the planner refuses; marking such a
 * batch consolidated would lose the person's words for good. The cheap test: the prompt held a
 * substantive turn of the person's (a few words, not an injection attempt), no memory, entity
 * or link operation survived, and the model either had operations refused or wrote an empty
 * answer without saying `nothing`. Importance scores alone count as "read, nothing learned".
 */
export function answerProblem(answer: ConsolidationAnswer, plan: Plan, episodes: readonly Episode[]): string | undefined {
  const learned =
    plan.create.length +
    plan.reinforce.length +
    plan.update.length +
    plan.contradict.length +
    plan.decay.length +
    plan.connect.length +
    plan.entities.length +
    plan.insights.length;
  if (learned > 0 || (answer.nothing !== undefined && answer.nothing !== false)) return undefined;
  const substantive = episodes.some((e) => e.role === 'user' && !looksLikeInjection(e.content) && e.content.trim().split(/\s+/).length >= SUBSTANTIVE_WORDS);
  if (!substantive) return undefined;
  if (plan.rejected.length > 0) return `every operation was refused (${plan.rejected.length})`;
  if (plan.importance.length === 0 && plan.summaries.length === 0) return 'the answer was empty and did not say there was nothing to learn';
  return undefined;
}

/**
 * The plan with relative dates in what it writes ("appointment tomorrow") made absolute
 * ("appointment on 2026-03-06"), resolved against the local day of the first episode each
 * statement cites, in the scope's time zone: the memory is read long after "tomorrow" passed.
 */
export function withAbsoluteDates(plan: Plan, episodes: readonly Episode[], timeZone: string | null): Plan {
  const byId = new Map(episodes.map((e) => [e.id, e]));
  const resolve = (content: string, sources: readonly string[]) => {
    const at = sources.map((id) => byId.get(id)?.timestamp).find((t) => t !== undefined);
    return at ? resolveRelativeDates(content, { at, timeZone }) : content;
  };
  return {
    ...plan,
    create: plan.create.map((m) => ({ ...m, content: resolve(m.content, m.sourceEpisodeIds) })),
    update: plan.update.map((u) => ({ ...u, content: resolve(u.content, u.sourceEpisodeIds) })),
    contradict: plan.contradict.map((c) => ({ ...c, statement: { ...c.statement, content: resolve(c.statement.content, c.statement.sourceEpisodeIds) } })),
  };
}

export function createConsolidator(deps: {
  readonly prisma: PrismaClient;
  readonly llm: LanguageModel;
  readonly search: HybridSearch;
  readonly embedder?: Embedder;
  readonly index?: VectorIndex;
  readonly logger: Logger;
  readonly options?: Partial<ConsolidatorOptions>;
}): Consolidator {
  // The answer never takes more than half the window (a small local model would otherwise be
  // asked for more answer than its whole window holds); prompts are packed in what is left.
  const maxAnswerTokens = Math.min(deps.options?.maxAnswerTokens ?? DEFAULT_CONSOLIDATOR_OPTIONS.maxAnswerTokens, Math.floor(deps.llm.contextWindow / 2));
  const options = { ...DEFAULT_CONSOLIDATOR_OPTIONS, packing: packingFor(deps.llm.contextWindow, maxAnswerTokens), ...deps.options, maxAnswerTokens };
  const log = deps.logger.child({ component: 'consolidation' });
  const { prisma } = deps;

  const eligible = (scopeId: string) => ({ scopeId, ...eligibleEpisodes(options.maxAttempts) });

  /**
   * The zone of a batch (the scope policy's rule: the scope's own, else the default), read once:
   * every prompt of the batch shows episode times in it and every relative date is resolved in
   * it, so a line never says one day while the memory learned from it says another.
   */
  async function timeZoneOf(scopeId: string): Promise<string> {
    const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { timezone: true } });
    return scopeTimeZone({ timezone: scope?.timezone ?? null }, options.defaultTimeZone);
  }

  /** Memories relevant to a prompt's episodes: a search per group with the person's words. */
  async function relevantMemories(scopeId: string, groups: readonly PromptEpisodeGroup[], now: Date): Promise<Memory[]> {
    const ids = new Set<string>();
    const perGroup = Math.max(5, Math.ceil(options.memoriesPerPrompt / groups.length));
    for (const group of groups) {
      const text = group.episodes
        .filter((e) => e.role === 'user')
        .map((e) => e.content)
        .join('\n')
        .slice(0, 2_000);
      if (text.trim() === '') continue;
      const { results } = await deps.search.search({ scopeId, semanticQuery: text, kinds: ['memory'], includeInactive: true, limit: perGroup * 2, now });
      for (const r of results) if (ids.size < options.memoriesPerPrompt * 2) ids.add(r.id);
    }
    if (ids.size === 0) return [];
    const rows = await prisma.memory.findMany({ where: { scopeId, id: { in: [...ids] }, validTo: null } });
    const order = [...ids];
    return rows.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id)).slice(0, options.memoriesPerPrompt);
  }

  /** The person's turns that relayed notes among `episodes` name (the evidence rule checks them). */
  async function relayedTurns(scopeId: string, episodes: readonly Episode[]): Promise<Map<string, Episode>> {
    const ids = episodes.map((e) => relayedFromOf(e)).filter((id): id is string => id !== undefined);
    if (ids.length === 0) return new Map();
    const rows = await prisma.episode.findMany({ where: { scopeId, id: { in: ids } } });
    return new Map(rows.map((r) => [r.id, r]));
  }

  async function writeVectors(scopeId: string, memoryIds: readonly string[]): Promise<void> {
    if (!deps.embedder || !deps.index || memoryIds.length === 0) return;
    try {
      const rows = await prisma.memory.findMany({ where: { scopeId, id: { in: [...memoryIds] } }, select: { id: true, content: true, updatedAt: true } });
      const vectors = await deps.embedder.embed(rows.map((r) => r.content));
      await deps.index.upsert(rows.map((r, i) => ({ id: r.id, kind: 'memory' as const, scopeId, vector: vectors[i] as Float32Array })));
      await prisma.$transaction(
        rows.map((r) => prisma.memory.updateMany({ where: { id: r.id, updatedAt: r.updatedAt }, data: { embeddedWith: deps.embedder!.name } })),
      );
    } catch (error) {
      // The rows are committed with an empty `embeddedWith`: the embedding worker backfills them.
      log.warn('could not write vectors of new memories now; the embedding worker will', { scopeId, error });
    }
  }

  /**
   * One more failed attempt for `ids`; those that reach the cap are given up on, with an audit
   * event counting them (the next digest says how many messages could not be learned from).
   */
  async function countAttempt(scopeId: string, ids: readonly string[], runId: string, now: Date): Promise<void> {
    await prisma.episode.updateMany({ where: { scopeId, id: { in: [...ids] } }, data: { consolidationAttempts: { increment: 1 } } });
    const exhausted = await prisma.episode.findMany({
      where: { scopeId, id: { in: [...ids] }, consolidated: false, consolidationAttempts: options.maxAttempts },
      select: { id: true },
    });
    if (exhausted.length === 0) return;
    await prisma.auditEvent.create({
      data: {
        scopeId,
        runId,
        action: GAVE_UP_ACTION,
        subjectType: 'scope',
        subjectId: scopeId,
        createdAt: now,
        after: { episodes: exhausted.length, episodeIds: exhausted.map((e) => e.id) },
        reason: `no usable answer after ${options.maxAttempts} attempts; these messages are no longer consolidated`,
      },
    });
    log.warn('gave up consolidating episodes after too many attempts', { scopeId, runId, episodes: exhausted.length });
  }

  return {
    pendingCount: (scopeId) => prisma.episode.count({ where: eligible(scopeId) }),

    async consolidateBatch(request) {
      const { scopeId, runId, now } = request;
      const llm = request.llm ?? deps.llm;
      const episodes = await prisma.episode.findMany({ where: eligible(scopeId), orderBy: [{ timestamp: 'asc' }, { id: 'asc' }], take: options.batchSize });
      const empty = { responses: [], leftOver: 0, shown: { episodes: [], memories: [] } };
      if (episodes.length === 0) return { status: 'empty', episodeCount: 0, ...empty };

      const timeZone = await timeZoneOf(scopeId);
      // Episodes that failed before are asked about in smaller prompts: halved once per attempt.
      const prompts = packGroups(groupEpisodes(episodes), options.packing).flatMap((groups) =>
        splitForAttempts(groups, Math.max(...groups.flatMap((g) => g.episodes.map((e) => e.consolidationAttempts)))),
      );
      const plans: Plan[] = [];
      const responses: LlmResponse[] = [];
      const shownEpisodes: Episode[] = [];
      const shownMemories = new Map<string, Memory>();
      /** Episodes whose answer could not be used: they stay pending with an attempt counted. */
      const unusable: Episode[] = [];
      const refused: Plan['rejected'] = [];
      const handled = new Set<string>();
      // Reflection (sleep/reflection.ts) rides on this batch's call when due: the first prompt whose
      // answer is used asks for insights too; a prompt whose answer is not used passes the request on.
      const reflection = await reflectionDue(prisma, scopeId, episodes);
      let insightsWanted = reflection.due;
      let reflected = false;
      let budget = request.tokenBudgetLeft ?? Number.POSITIVE_INFINITY;

      /**
       * Plans one prompt's groups; false when the budget stops the batch here. An answer cut off
       * at the answer limit (even after its repair turn) is asked again in two halves, down to
       * one episode a prompt; an answer that teaches nothing where there was something to learn
       * is asked again at once in two halves (`retried` marks those), and what still cannot be
       * used waits for a later run.
       */
      const ask = async (groups: readonly PromptEpisodeGroup[], retried = false): Promise<boolean> => {
        const episodeIds = new ShortIds();
        const memoryIds = new ShortIds();
        const memories = await relevantMemories(scopeId, groups, now);
        const insightsAsked = insightsWanted;
        const prompt = buildConsolidationPrompt({ memories, groups, memoryIds, episodeIds, timeZone, insights: insightsAsked });
        const call = {
          system: CONSOLIDATION_SYSTEM_PROMPT,
          messages: [{ role: 'user' as const, content: prompt }],
          maxTokens: options.maxAnswerTokens,
          temperature: 0,
          purpose: 'consolidation',
          scopeId,
          runId,
        };
        if (estimateRequestTokens(call) > budget) return false;
        const promptEpisodes = groups.flatMap((g) => g.episodes);
        let structured;
        try {
          structured = await completeStructured(llm, call, consolidationAnswerSchema);
        } catch (error) {
          // The budget refused this prompt (or its repair turn): like a prompt that does not fit,
          // it and the rest wait for another day; what earlier prompts planned is applied.
          if (isBudgetError(error)) return false;
          if (!isCutOff(error)) throw error;
          // The cut-off answers were paid for: the halves are asked on what is left after them.
          const details = (error as LlmError).details ?? {};
          budget -= Number(details.inputTokens ?? 0) + Number(details.outputTokens ?? 0);
          const halves = halveGroups(groups);
          log.warn('a consolidation answer was cut off; asking about half as much at once', {
            scopeId,
            runId,
            episodes: promptEpisodes.length,
            split: halves !== undefined,
          });
          if (!halves) {
            unusable.push(...promptEpisodes);
            for (const e of promptEpisodes) handled.add(e.id);
            return true;
          }
          return (await ask(halves[0], retried)) && ask(halves[1], retried);
        }
        const { value, responses: calls } = structured;
        responses.push(...calls);
        budget -= calls.reduce((n, r) => n + r.usage.inputTokens + r.usage.outputTokens, 0);
        const relayed = await relayedTurns(scopeId, promptEpisodes);
        const plan = withAbsoluteDates(
          makePlan({ answer: value, episodes: promptEpisodes, memories, episodeIds, memoryIds, relayed, insightsAsked }),
          promptEpisodes,
          timeZone,
        );
        for (const r of plan.rejected) log.warn('rejected a consolidation operation', { scopeId, runId, operation: r.operation, reason: r.reason });
        for (const e of promptEpisodes) handled.add(e.id);
        const problem = answerProblem(value, plan, promptEpisodes);
        const halves = problem && !retried ? halveGroups(groups) : undefined;
        if (halves) {
          // A smaller prompt is a new question (a model that slipped on ten turns usually reads
          // five right), asked now: the next run would halve it too, but the next run may be
          // tomorrow's window, and the person's words would wait a night for it. Once only, so
          // a model that cannot answer costs at most two more calls a prompt before the wait.
          log.warn('a consolidation answer taught nothing; asking about half as much at once', { scopeId, runId, episodes: promptEpisodes.length, problem });
          for (const e of promptEpisodes) handled.delete(e.id);
          refused.push(...plan.rejected);
          return (await ask(halves[0], true)) && ask(halves[1], true);
        }
        if (problem) {
          log.warn('a consolidation answer taught nothing; its episodes stay for a later run', { scopeId, runId, episodes: promptEpisodes.length, problem });
          unusable.push(...promptEpisodes);
          refused.push(...plan.rejected);
          return true;
        }
        plans.push(plan);
        if (insightsAsked) (insightsWanted = false), (reflected = true);
        shownEpisodes.push(...promptEpisodes);
        for (const m of memories) shownMemories.set(m.id, m);
        return true;
      };

      let leftOver = 0;
      try {
        for (const groups of prompts) {
          if (await ask(groups)) continue;
          leftOver = episodes.length - handled.size;
          break;
        }
      } catch (error) {
        const ids = episodes.map((e) => e.id);
        // An unreachable model says nothing about the episodes: only answers that could not be
        // used count toward the attempt cap (a batch that poisons the model is given up on).
        const unavailable = error instanceof LlmError && ['timeout', 'rate_limited', 'server', 'network', 'aborted', 'auth'].includes(error.reason);
        if (!request.dryRun && !unavailable) await countAttempt(scopeId, ids, runId, now);
        log.error('consolidation batch failed; nothing applied, episodes stay for a later run', { scopeId, runId, episodes: ids.length, error });
        return {
          status: 'failed',
          episodeCount: episodes.length,
          responses,
          error,
          leftOver: 0,
          shown: { episodes: shownEpisodes, memories: [...shownMemories.values()] },
        };
      }
      if (unusable.length > 0 && !request.dryRun)
        await countAttempt(
          scopeId,
          unusable.map((e) => e.id),
          runId,
          now,
        );
      const retryLater = unusable.length;
      if (plans.length === 0 && retryLater > 0) {
        const error = new Error(
          `the model's answers taught nothing from ${plural(retryLater, 'episode')} with the person's words; they stay for a later run, in smaller prompts`,
        );
        return {
          status: 'failed',
          episodeCount: 0,
          responses,
          error,
          leftOver,
          retryLater,
          refused,
          shown: { episodes: shownEpisodes, memories: [...shownMemories.values()] },
        };
      }
      const shown = { episodes: shownEpisodes, memories: [...shownMemories.values()] };
      if (plans.length === 0) return { status: 'deferred', episodeCount: 0, responses, leftOver, shown };
      const merged = mergePlans(plans);
      // The writer folds restatements of current memories; their vectors are found here, before the transaction.
      const near = await findNeighbours(
        deps,
        scopeId,
        [...merged.create, ...merged.insights].map((m) => m.content),
      );
      const plan: Plan = {
        ...merged,
        create: merged.create.map((m, i) => ({ ...m, neighbours: near[i] })),
        insights: merged.insights.map((m, i) => ({ ...m, neighbours: near[merged.create.length + i] })),
      };
      const reflectedInfo = reflected ? { accumulated: reflection.accumulated } : undefined;
      if (request.dryRun)
        return { status: 'planned', episodeCount: plan.episodeIds.length, plan, responses, leftOver, retryLater, refused, shown, reflected: reflectedInfo };
      let applied: AppliedPlan;
      try {
        // The reflection is recorded with its insights, in the batch's transaction.
        const record = reflected
          ? (tx: Parameters<typeof recordReflection>[0]) =>
              recordReflection(tx, scopeId, { runId, now }, { insights: plan.insights.length, accumulated: reflection.accumulated })
          : undefined;
        applied = await applyPlan(prisma, scopeId, plan, { runId, now }, record);
      } catch (error) {
        await countAttempt(scopeId, plan.episodeIds, runId, now);
        log.error('applying a consolidation batch failed; the transaction rolled back', { scopeId, runId, error });
        return { status: 'failed', episodeCount: plan.episodeIds.length, plan, responses, error, leftOver, shown };
      }
      await writeVectors(scopeId, applied.createdMemoryIds);
      log.info('consolidated a batch', { scopeId, runId, episodes: plan.episodeIds.length, retryLater, calls: responses.length, ...applied.counts });
      return {
        status: 'applied',
        episodeCount: plan.episodeIds.length,
        plan,
        applied,
        responses,
        leftOver,
        retryLater,
        refused,
        shown,
        reflected: reflectedInfo,
      };
    },
  };
}
