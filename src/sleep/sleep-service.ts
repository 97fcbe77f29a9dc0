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
 *
 * This file owns the service's contract and the small jobs (decay, digest, the dry run); the
 * consolidation job is `consolidation-job.ts` (capped scopes: `capped-consolidation.ts`), its
 * dreaming phase `dream-phase.ts` and its report `consolidation-report.ts`.
 */
import type { LanguageModel } from '../llm/language-model';
import type { Embedder } from '../memory/embeddings/embedder';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { IndexGuard } from '../memory/vectors/index-guard';
import type { VectorIndex } from '../memory/vectors/vector-index';
import type { Logger } from '../shared/logger';
import type { PrismaClient, SleepRun } from '../storage/prisma';
import { createConsolidator, type BatchResult, type Consolidator, type ConsolidatorOptions } from './consolidation/consolidator';
import { createConsolidationJob } from './consolidation-job';
import type { ConsolidationReport } from './consolidation-report';
import { decayScope, type DecayOptions } from './decay';
import { buildDigest } from '../memory/digests/digest';
import { createDreamPhase } from './dream-phase';
import type { SleepJobContext, SleepJobs } from './sleep-jobs';
import { regenerateSoul } from '../memory/profiles/soul';
import { plural } from '../shared/plural';

export type { ConsolidationReport } from './consolidation-report';

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

  const consolidateScope = createConsolidationJob(deps, { consolidator, dream: createDreamPhase(deps, log), log });

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
