/**
 * Consolidation of one scope (seed 000 steps 1-3): gather up to 100 unconsolidated episodes,
 * oldest first; group and pack them into coherent prompts; give the model each prompt with the
 * memories relevant to it (retrieved, not all); turn its answers into one plan; apply the whole
 * batch in one transaction; then write the new memories' vectors.
 *
 * Failure applies nothing: a model error, a timeout or an answer still invalid after one repair
 * leaves every episode of the batch unconsolidated with one more attempt counted; they are
 * retried on a later run (with backoff, up to a cap).
 */
import { completeStructured } from '../../llm/structured';
import { LlmError, type LanguageModel, type LlmResponse } from '../../llm/language-model';
import type { Embedder } from '../../memory/embeddings/embedder';
import type { HybridSearch } from '../../memory/retrieval/hybrid-search';
import type { VectorIndex } from '../../memory/vectors/vector-index';
import type { Logger } from '../../shared/logger';
import type { Episode, Memory, PrismaClient } from '../../storage/prisma';
import { relayedFromOf } from '../../memory/memories/memory-guards';
import { applyPlan, type AppliedPlan } from './apply-plan';
import { DEFAULT_PACKING, groupEpisodes, packGroups, packingFor, type PackingLimits } from './grouping';
import { consolidationAnswerSchema } from './operations';
import { makePlan, mergePlans, type Plan } from './plan';
import { buildConsolidationPrompt, CONSOLIDATION_SYSTEM_PROMPT, type PromptEpisodeGroup } from './prompt';
import { ShortIds } from '../../memory/short-ids';
import { isBudgetError } from '../token-budget';
import { findNeighbours } from '../../memory/memories/restatements';

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
}

export const DEFAULT_CONSOLIDATOR_OPTIONS: ConsolidatorOptions = { batchSize: 100, maxAttempts: 5, memoriesPerPrompt: 30, packing: DEFAULT_PACKING, maxAnswerTokens: 4096 };

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
  /** Short ids and rows of what the prompts showed, for the dry-run diff. */
  readonly shown: { readonly episodes: readonly Episode[]; readonly memories: readonly Memory[] };
}

export interface Consolidator {
  consolidateBatch(request: BatchRequest): Promise<BatchResult>;
  /** Unconsolidated episodes still eligible (attempts below the cap). */
  pendingCount(scopeId: string): Promise<number>;
}

/** About 4 characters a token for English prose; a prompt's tokens before sending it. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
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
  const maxAnswerTokens = deps.options?.maxAnswerTokens ?? DEFAULT_CONSOLIDATOR_OPTIONS.maxAnswerTokens;
  const options = { ...DEFAULT_CONSOLIDATOR_OPTIONS, packing: packingFor(deps.llm.contextWindow, maxAnswerTokens), ...deps.options };
  const log = deps.logger.child({ component: 'consolidation' });
  const { prisma } = deps;

  const eligible = (scopeId: string) => ({ scopeId, consolidated: false, consolidationAttempts: { lt: options.maxAttempts } });

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
      await prisma.$transaction(rows.map((r) => prisma.memory.updateMany({ where: { id: r.id, updatedAt: r.updatedAt }, data: { embeddedWith: deps.embedder!.name } })));
    } catch (error) {
      // The rows are committed with an empty `embeddedWith`: the embedding worker backfills them.
      log.warn('could not write vectors of new memories now; the embedding worker will', { scopeId, error });
    }
  }

  return {
    pendingCount: (scopeId) => prisma.episode.count({ where: eligible(scopeId) }),

    async consolidateBatch(request) {
      const { scopeId, runId, now } = request;
      const llm = request.llm ?? deps.llm;
      const episodes = await prisma.episode.findMany({ where: eligible(scopeId), orderBy: [{ timestamp: 'asc' }, { id: 'asc' }], take: options.batchSize });
      const empty = { responses: [], leftOver: 0, shown: { episodes: [], memories: [] } };
      if (episodes.length === 0) return { status: 'empty', episodeCount: 0, ...empty };

      const prompts = packGroups(groupEpisodes(episodes), options.packing);
      const plans: Plan[] = [];
      const responses: LlmResponse[] = [];
      const shownEpisodes: Episode[] = [];
      const shownMemories = new Map<string, Memory>();
      let budget = request.tokenBudgetLeft ?? Number.POSITIVE_INFINITY;
      let leftOver = 0;
      try {
        for (const [i, groups] of prompts.entries()) {
          const episodeIds = new ShortIds();
          const memoryIds = new ShortIds();
          const memories = await relevantMemories(scopeId, groups, now);
          const prompt = buildConsolidationPrompt({ memories, groups, memoryIds, episodeIds });
          const estimate = estimateTokens(CONSOLIDATION_SYSTEM_PROMPT) + estimateTokens(prompt) + options.maxAnswerTokens / 4;
          if (estimate > budget) {
            leftOver = prompts.slice(i).reduce((n, p) => n + p.reduce((m, g) => m + g.episodes.length, 0), 0);
            break;
          }
          const promptEpisodes = groups.flatMap((g) => g.episodes);
          let structured;
          try {
            structured = await completeStructured(
              llm,
              { system: CONSOLIDATION_SYSTEM_PROMPT, messages: [{ role: 'user', content: prompt }], maxTokens: options.maxAnswerTokens, temperature: 0, purpose: 'consolidation', scopeId, runId },
              consolidationAnswerSchema,
            );
          } catch (error) {
            // The budget refused this prompt (or its repair turn): like a prompt that does not fit,
            // it and the rest wait for another day; what earlier prompts planned is applied.
            if (!isBudgetError(error)) throw error;
            leftOver = prompts.slice(i).reduce((n, p) => n + p.reduce((m, g) => m + g.episodes.length, 0), 0);
            break;
          }
          const { value, responses: calls } = structured;
          responses.push(...calls);
          budget -= calls.reduce((n, r) => n + r.usage.inputTokens + r.usage.outputTokens, 0);
          const relayed = await relayedTurns(scopeId, promptEpisodes);
          const plan = makePlan({ answer: value, episodes: promptEpisodes, memories, episodeIds, memoryIds, relayed });
          for (const r of plan.rejected) log.warn('rejected a consolidation operation', { scopeId, runId, operation: r.operation, reason: r.reason });
          plans.push(plan);
          shownEpisodes.push(...promptEpisodes);
          for (const m of memories) shownMemories.set(m.id, m);
        }
      } catch (error) {
        const ids = episodes.map((e) => e.id);
        // An unreachable model says nothing about the episodes: only answers that could not be
        // used count toward the attempt cap (a batch that poisons the model is given up on).
        const unavailable = error instanceof LlmError && ['timeout', 'rate_limited', 'server', 'network', 'aborted', 'auth'].includes(error.reason);
        if (!request.dryRun && !unavailable) await prisma.episode.updateMany({ where: { scopeId, id: { in: ids } }, data: { consolidationAttempts: { increment: 1 } } });
        log.error('consolidation batch failed; nothing applied, episodes stay for a later run', { scopeId, runId, episodes: ids.length, error });
        return { status: 'failed', episodeCount: episodes.length, responses, error, leftOver: 0, shown: { episodes: shownEpisodes, memories: [...shownMemories.values()] } };
      }
      const shown = { episodes: shownEpisodes, memories: [...shownMemories.values()] };
      if (plans.length === 0) return { status: 'deferred', episodeCount: 0, responses, leftOver, shown };
      const merged = mergePlans(plans);
      // The writer folds restatements of current memories; their vectors are found here, before the transaction.
      const near = await findNeighbours(deps, scopeId, merged.create.map((m) => m.content));
      const plan: Plan = { ...merged, create: merged.create.map((m, i) => ({ ...m, neighbours: near[i] })) };
      if (request.dryRun) return { status: 'planned', episodeCount: plan.episodeIds.length, plan, responses, leftOver, shown };
      let applied: AppliedPlan;
      try {
        applied = await applyPlan(prisma, scopeId, plan, { runId, now });
      } catch (error) {
        await prisma.episode.updateMany({ where: { scopeId, id: { in: plan.episodeIds } }, data: { consolidationAttempts: { increment: 1 } } });
        log.error('applying a consolidation batch failed; the transaction rolled back', { scopeId, runId, error });
        return { status: 'failed', episodeCount: plan.episodeIds.length, plan, responses, error, leftOver, shown };
      }
      await writeVectors(scopeId, applied.createdMemoryIds);
      log.info('consolidated a batch', { scopeId, runId, episodes: plan.episodeIds.length, calls: responses.length, ...applied.counts });
      return { status: 'applied', episodeCount: plan.episodeIds.length, plan, applied, responses, leftOver, shown };
    },
  };
}
