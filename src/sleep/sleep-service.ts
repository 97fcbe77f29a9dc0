/**
 * The sleep work of one scope (the {@link SleepJobs} the scheduler runs), in seed 003's phases:
 *
 * - compacting: consolidation batches (importance scoring, summaries, entity observations and
 *   seed 000's operations, each batch one transaction) until the scope is done, wakes up, or its
 *   token budget is spent; capped scopes (seed 001) instead remember each ended conversation;
 * - dreaming: links between similar memories (and orphan pruning), entity observations folded
 *   into attributes, stale working memory ended (reflection is no step of its own: when due, it
 *   rides on a consolidation call, sleep/reflection.ts);
 * - then the soul is regenerated from what is now believed.
 *
 * A failure in a dreaming step is logged and does not undo the consolidation before it.
 */
import type { LanguageModel, LlmResponse } from '../llm/language-model';
import type { Embedder } from '../memory/embeddings/embedder';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { IndexGuard } from '../memory/vectors/index-guard';
import type { VectorIndex } from '../memory/vectors/vector-index';
import type { Logger } from '../shared/logger';
import type { PrismaClient, SleepRun } from '../storage/prisma';
import { rememberConversation } from '../memory/memories/capped-memory';
import { createConsolidator, type BatchResult, type Consolidator, type ConsolidatorOptions } from './consolidation/consolidator';
import { groupEpisodes } from './consolidation/grouping';
import { decayScope, type DecayOptions } from './decay';
import { buildDigest } from '../memory/digests/digest';
import { linkSimilarMemories, mergeRestatements } from './dreaming';
import { foldEntityObservations } from './entities';
import { scopeSettingsSchema } from '../memory/scopes/scope-settings';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, eligibleEpisodes } from '../memory/scopes/scope-policy';
import type { SleepJobContext, SleepJobOutcome, SleepJobs } from './sleep-jobs';
import { regenerateSoul } from '../memory/profiles/soul';
import { endStaleConversations } from './stale-conversations';
import { isBudgetError, withTokenBudget, type BudgetedModel } from './token-budget';
import { plural } from '../shared/plural';

export interface SleepServiceDeps {
  readonly prisma: PrismaClient;
  /** Without a model, consolidation is skipped (decay and digests still run). */
  readonly llm?: LanguageModel;
  readonly search: HybridSearch;
  readonly embedder?: Embedder;
  readonly index?: VectorIndex;
  readonly guard?: IndexGuard;
  readonly logger: Logger;
  readonly consolidator?: Partial<ConsolidatorOptions>;
  readonly decay?: DecayOptions;
  /** SOUL_MAX_TOKENS, and the zone (TZ) of scopes that name none: the soul and digests are written in it. */
  readonly soul?: { readonly maxTokens?: number; readonly defaultTimeZone?: string };
}

/** What one consolidation job did, for the SleepRun row, the CLI and tests. */
export interface ConsolidationReport {
  readonly batches: number;
  readonly episodes: number;
  readonly llmCalls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly counts: Record<string, number>;
  readonly rejected: string[];
  readonly outcome: SleepJobOutcome;
  readonly dreaming: Record<string, number | string>;
}

export interface SleepService extends SleepJobs {
  /** The consolidation job with its full report (what `consolidate` runs). */
  consolidateScope(scopeId: string, ctx: SleepJobContext): Promise<ConsolidationReport>;
  /** A dry run: the plan for the next batch, applying nothing. */
  planNextBatch(scopeId: string, ctx: Pick<SleepJobContext, 'now' | 'runId'>): Promise<BatchResult>;
  /** The scope's latest run of a kind (what a manual `sleep` reports after running it); null before the first. */
  latestRun(scopeId: string, kind: SleepRunKind): Promise<SleepRun | null>;
}

/** The kinds of sleep work a SleepRun row records. */
export type SleepRunKind = 'consolidate' | 'decay' | 'digest' | 'reflection';

function addCounts(into: Record<string, number>, from: Record<string, number> | undefined): void {
  for (const [k, v] of Object.entries(from ?? {})) into[k] = (into[k] ?? 0) + v;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function createSleepService(deps: SleepServiceDeps): SleepService {
  const { prisma } = deps;
  const log = deps.logger.child({ component: 'sleep' });
  const consolidator: Consolidator | undefined = deps.llm
    ? createConsolidator({
        prisma,
        llm: deps.llm,
        search: deps.search,
        embedder: deps.embedder,
        index: deps.index,
        logger: deps.logger,
        options: deps.consolidator,
      })
    : undefined;

  async function memoryCapOf(scopeId: string): Promise<number | undefined> {
    const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { settings: true } });
    const parsed = scopeSettingsSchema.safeParse(scope?.settings ?? {});
    return parsed.success ? parsed.data.memoryCap : undefined;
  }

  async function dream(
    scopeId: string,
    ctx: SleepJobContext,
    responses: LlmResponse[],
    llm: LanguageModel | undefined,
  ): Promise<Record<string, number | string>> {
    const origin = { runId: ctx.runId, now: ctx.now };
    const out: Record<string, number | string> = {};
    const step = async (name: string, fn: () => Promise<void>) => {
      const started = Date.now();
      try {
        await fn();
        out[`${name}Ms`] = Date.now() - started;
      } catch (error) {
        if (isBudgetError(error)) {
          // Not sent: the day's budget is spent. The step runs on a later night.
          out[`${name}Deferred`] = describe(error);
          log.info(`dreaming step "${name}" put off: daily token budget spent`, { scopeId, runId: ctx.runId });
          return;
        }
        out[`${name}Error`] = describe(error);
        log.warn(`dreaming step "${name}" failed; consolidation is kept`, { scopeId, runId: ctx.runId, error });
      }
    };
    if (deps.embedder) {
      await step('merge', async () => {
        out.merged = await mergeRestatements({ prisma, embedder: deps.embedder! }, scopeId, origin);
      });
    }
    if (deps.embedder && deps.index && (!deps.guard || deps.guard.state().status === 'ready')) {
      await step('links', async () => {
        const r = await linkSimilarMemories({ prisma, embedder: deps.embedder!, index: deps.index! }, scopeId, origin);
        out.linked = r.linked;
        out.linksPruned = r.pruned;
      });
    }
    if (llm) {
      await step('entities', async () => {
        const r = await foldEntityObservations({ prisma, llm }, scopeId, origin);
        responses.push(...r.responses);
        out.entitiesFolded = r.entities;
      });
    }
    await step('stale', async () => {
      out.staleConversations = await endStaleConversations(prisma, scopeId, ctx.now);
    });
    await step('soul', async () => {
      const r = await regenerateSoul(prisma, scopeId, { ...deps.soul, now: ctx.now, runId: ctx.runId });
      out.soulVersion = r.version;
    });
    return out;
  }

  async function consolidateCapped(scopeId: string, cap: number, ctx: SleepJobContext, llm: BudgetedModel): Promise<ConsolidationReport> {
    const episodes = await prisma.episode.findMany({
      where: { scopeId, ...eligibleEpisodes(deps.consolidator?.maxAttempts ?? DEFAULT_CONSOLIDATION_ATTEMPTS) },
      orderBy: [{ timestamp: 'asc' }, { id: 'asc' }],
      take: 200,
    });
    const responses: LlmResponse[] = [];
    const counts: Record<string, number> = {};
    let done = 0;
    let outcome: SleepJobOutcome = { status: episodes.length === 0 ? 'skipped' : 'succeeded' };
    for (const group of groupEpisodes(episodes)) {
      if (!ctx.shouldContinue()) break;
      try {
        const r = await rememberConversation({ prisma, llm, index: deps.index, logger: deps.logger }, scopeId, group.episodes, cap, {
          runId: ctx.runId,
          now: ctx.now,
        });
        responses.push(...r.responses);
        addCounts(counts, { created: r.created ? 1 : 0, removed: r.removedIds.length, [`compaction_${r.compaction ?? 'none'}`]: 1 });
        done += group.episodes.length;
      } catch (error) {
        if (isBudgetError(error)) {
          // Not sent, so not an attempt: the conversations wait for tomorrow's budget.
          outcome = { status: 'deferred', detail: `daily token budget spent; ${plural(episodes.length - done, 'episode')} wait for tomorrow` };
          break;
        }
        await prisma.episode.updateMany({ where: { scopeId, id: { in: group.episodes.map((e) => e.id) } }, data: { consolidationAttempts: { increment: 1 } } });
        outcome = { status: 'failed', detail: `capped memory failed: ${describe(error)}` };
        log.error('capped-mode memory creation failed; the conversation stays for a later run', { scopeId, error });
        break;
      }
    }
    const dreaming = await dream(scopeId, ctx, responses, llm);
    const u = llm.spent();
    return {
      batches: done > 0 ? 1 : 0,
      episodes: done,
      llmCalls: u.calls,
      inputTokens: u.inputTokens,
      outputTokens: u.outputTokens,
      counts,
      rejected: [],
      outcome,
      dreaming,
    };
  }

  async function consolidateScope(scopeId: string, ctx: SleepJobContext): Promise<ConsolidationReport> {
    const started = Date.now();
    let report: ConsolidationReport;
    if (!consolidator) {
      report = {
        batches: 0,
        episodes: 0,
        llmCalls: 0,
        inputTokens: 0,
        outputTokens: 0,
        counts: {},
        rejected: [],
        outcome: { status: 'skipped', detail: 'no language model configured (set ANTHROPIC_API_KEY or run Ollama)' },
        dreaming: {},
      };
    } else {
      // Every call of the job (prompts, repair turns, dreaming) is checked against the budget first.
      const llm = withTokenBudget(deps.llm!, ctx.tokenBudgetLeft);
      const cap = await memoryCapOf(scopeId);
      if (cap !== undefined) report = await consolidateCapped(scopeId, cap, ctx, llm);
      else {
        const responses: LlmResponse[] = [];
        const counts: Record<string, number> = {};
        const rejected: string[] = [];
        let batches = 0;
        let episodes = 0;
        let outcome: SleepJobOutcome = { status: 'skipped', detail: 'nothing to consolidate' };
        while (ctx.shouldContinue()) {
          const r = await consolidator.consolidateBatch({ scopeId, runId: ctx.runId, now: ctx.now, tokenBudgetLeft: llm.left(), llm });
          responses.push(...r.responses);
          if (r.plan) rejected.push(...r.plan.rejected.map((x) => `${x.operation}: ${x.reason}`));
          rejected.push(...(r.refused ?? []).map((x) => `${x.operation}: ${x.reason}`));
          if (r.status === 'applied') {
            batches++;
            episodes += r.episodeCount;
            addCounts(counts, r.applied?.counts);
            outcome = { status: 'succeeded', detail: `${plural(episodes, 'episode')} consolidated` };
            if (r.leftOver > 0) {
              outcome = { status: 'deferred', detail: `daily token budget spent; ${plural(r.leftOver, 'episode')} wait for tomorrow` };
              break;
            }
            // Episodes whose answer could not be used even when asked again in halves (the
            // consolidator does that at once) are retried by a later run, not this one: the
            // scheduler's next run is the backoff, and they come back in smaller prompts.
            if ((r.retryLater ?? 0) > 0) {
              outcome = { status: 'succeeded', detail: `${plural(episodes, 'episode')} consolidated; ${r.retryLater} wait for a later run (answer unusable)` };
              break;
            }
            continue;
          }
          if (r.status === 'deferred')
            outcome = { status: 'deferred', detail: `daily token budget spent (${Math.round(llm.left())} tokens left); consolidation continues tomorrow` };
          if (r.status === 'failed') outcome = { status: 'failed', detail: `consolidation failed, nothing applied: ${describe(r.error)}` };
          break;
        }
        const dreaming = batches > 0 ? await dream(scopeId, ctx, responses, llm) : {};
        // From the model's own count: includes calls of a batch that failed (their tokens were spent too).
        const u = llm.spent();
        report = { batches, episodes, llmCalls: u.calls, inputTokens: u.inputTokens, outputTokens: u.outputTokens, counts, rejected, outcome, dreaming };
      }
    }
    await prisma.sleepRun.updateMany({
      where: { id: ctx.runId },
      data: {
        episodeCount: report.episodes,
        llmCalls: report.llmCalls,
        inputTokens: report.inputTokens,
        outputTokens: report.outputTokens,
        stats: { batches: report.batches, ...report.counts, ...report.dreaming, rejected: report.rejected.slice(0, 50), durationMs: Date.now() - started },
      },
    });
    log.info('consolidation job finished', {
      scopeId,
      runId: ctx.runId,
      status: report.outcome.status,
      episodes: report.episodes,
      calls: report.llmCalls,
      inputTokens: report.inputTokens,
    });
    return report;
  }

  return {
    consolidateScope,
    async consolidate(scopeId, ctx) {
      return (await consolidateScope(scopeId, ctx)).outcome;
    },
    latestRun: (scopeId, kind) => prisma.sleepRun.findFirst({ where: { scopeId, kind }, orderBy: { startedAt: 'desc' } }),

    async planNextBatch(scopeId, ctx) {
      if (!consolidator)
        return {
          status: 'empty',
          episodeCount: 0,
          responses: [],
          leftOver: 0,
          shown: { episodes: [], memories: [] },
          error: new Error('no language model configured'),
        };
      return consolidator.consolidateBatch({ scopeId, runId: ctx.runId, now: ctx.now, dryRun: true });
    },
    async decay(scopeId, ctx) {
      const r = await decayScope(prisma, scopeId, { runId: ctx.runId, now: ctx.now }, deps.decay);
      if (r.decayed + r.expired > 0) await regenerateSoul(prisma, scopeId, { ...deps.soul, now: ctx.now, runId: ctx.runId });
      await prisma.sleepRun.updateMany({ where: { id: ctx.runId }, data: { stats: { ...r } } });
      return {
        status: r.decayed + r.expired + r.importanceAdjusted > 0 ? 'succeeded' : 'skipped',
        detail: `${r.decayed} decayed, ${r.deactivated} faded (${r.expired} past events), ${r.importanceAdjusted} importance adjusted`,
      };
    },
    async digest(scopeId, ctx) {
      const digest = await buildDigest(prisma, scopeId, { periodEnd: ctx.periodEnd ?? ctx.now, now: ctx.now, defaultTimeZone: deps.soul?.defaultTimeZone });
      return {
        status: digest.status === 'empty' ? 'skipped' : 'succeeded',
        detail:
          digest.status === 'empty' ? 'nothing to report' : `digest ${digest.id} with ${plural(Array.isArray(digest.items) ? digest.items.length : 0, 'item')}`,
      };
    },
  };
}
