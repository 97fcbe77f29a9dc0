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
import { LlmError, type LanguageModel, type LlmResponse } from '../../llm/language-model';
import type { Embedder } from '../../memory/embeddings/embedder';
import type { HybridSearch } from '../../memory/retrieval/hybrid-search';
import type { VectorIndex } from '../../memory/vectors/vector-index';
import type { Logger } from '../../shared/logger';
import type { Episode, Memory, PrismaClient } from '../../storage/prisma';
import { applyPlan, type AppliedPlan } from './apply-plan';
import { DEFAULT_PACKING, groupEpisodes, packGroups, packingFor, splitForAttempts, type PackingLimits } from './grouping';
import { mergePlans, type Plan } from './plan';
import { findNeighbours } from '../../memory/memories/restatements';
import { plural } from '../../shared/plural';
import { recordReflection, reflectionDue } from '../reflection';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, eligibleEpisodes } from '../../memory/scopes/scope-policy';
import { createBatchAsker } from './batch-asker';
import { createBatchContext } from './batch-context';
import { createBatchWrites } from './batch-writes';

export { answerProblem, withAbsoluteDates } from './answer-review';

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
  const options = { ...DEFAULT_CONSOLIDATOR_OPTIONS, ...deps.options, maxAnswerTokens };
  // The packing for the model's window is worked out by the first batch, not when the core is
  // built: it measures the answer's JSON Schema (~0.05 s), and most processes never consolidate.
  let packing = deps.options?.packing;
  const packingLimits = (): PackingLimits => (packing ??= packingFor(deps.llm.contextWindow, maxAnswerTokens));
  const log = deps.logger.child({ component: 'consolidation' });
  const { prisma } = deps;

  const eligible = (scopeId: string) => ({ scopeId, ...eligibleEpisodes(options.maxAttempts) });

  const context = createBatchContext({ prisma, search: deps.search, memoriesPerPrompt: options.memoriesPerPrompt, defaultTimeZone: options.defaultTimeZone });
  const { countAttempt, writeVectors } = createBatchWrites({ prisma, embedder: deps.embedder, index: deps.index, log, maxAttempts: options.maxAttempts });

  return {
    pendingCount: (scopeId) => prisma.episode.count({ where: eligible(scopeId) }),

    async consolidateBatch(request) {
      const { scopeId, runId, now } = request;
      const llm = request.llm ?? deps.llm;
      const episodes = await prisma.episode.findMany({ where: eligible(scopeId), orderBy: [{ timestamp: 'asc' }, { id: 'asc' }], take: options.batchSize });
      const empty = { responses: [], leftOver: 0, shown: { episodes: [], memories: [] } };
      if (episodes.length === 0) return { status: 'empty', episodeCount: 0, ...empty };

      const { timeZone, group } = await context.timeZoneOf(scopeId);
      // Episodes that failed before are asked about in smaller prompts: halved once per attempt.
      const prompts = packGroups(groupEpisodes(episodes), packingLimits()).flatMap((groups) =>
        splitForAttempts(groups, Math.max(...groups.flatMap((g) => g.episodes.map((e) => e.consolidationAttempts)))),
      );
      const reflection = await reflectionDue(prisma, scopeId, episodes);
      const asker = createBatchAsker(
        { context, log },
        {
          scopeId,
          runId,
          now,
          llm,
          timeZone,
          group,
          maxAnswerTokens: options.maxAnswerTokens,
          budget: request.tokenBudgetLeft ?? Number.POSITIVE_INFINITY,
          insightsWanted: reflection.due,
        },
      );
      const { ask, plans, responses, shownEpisodes, shownMemories, unusable, refused, handled } = asker;

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
      const reflectedInfo = asker.reflected ? { accumulated: reflection.accumulated } : undefined;
      if (request.dryRun)
        return { status: 'planned', episodeCount: plan.episodeIds.length, plan, responses, leftOver, retryLater, refused, shown, reflected: reflectedInfo };
      let applied: AppliedPlan;
      try {
        // The reflection is recorded with its insights, in the batch's transaction.
        const record = asker.reflected
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
