/**
 * Consolidation of a scope with a memory cap (seed 001's capped mode): instead of consolidation
 * batches, each ended conversation among the eligible episodes becomes one memory of it, kept
 * within the cap (capped-memory.ts). A conversation the day's budget cannot pay for waits for
 * tomorrow and is no attempt; a failure counts an attempt on its episodes and stops the run.
 */
import { rememberConversation } from '../memory/memories/capped-memory';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, eligibleEpisodes } from '../memory/scopes/scope-policy';
import type { LlmResponse } from '../llm/language-model';
import type { Logger } from '../shared/logger';
import { plural } from '../shared/plural';
import { groupEpisodes } from './consolidation/grouping';
import { addCounts, errorText, type ConsolidationReport } from './consolidation-report';
import type { DreamPhase } from './dream-phase';
import type { SleepJobContext, SleepJobOutcome } from './sleep-jobs';
import type { SleepServiceDeps } from './sleep-service';
import { isBudgetError, type BudgetedModel } from './token-budget';

/** Eligible episodes one capped run reads, oldest first (the rest wait for the next run). */
const CAPPED_EPISODES_PER_RUN = 200;

/** The consolidation job of a scope capped at `cap` memories. */
export async function consolidateCapped(
  deps: Pick<SleepServiceDeps, 'prisma' | 'index' | 'logger' | 'consolidator'>,
  run: { readonly log: Logger; readonly dream: DreamPhase },
  job: { readonly scopeId: string; readonly cap: number; readonly ctx: SleepJobContext; readonly llm: BudgetedModel },
): Promise<ConsolidationReport> {
  const { prisma } = deps;
  const { scopeId, cap, ctx, llm } = job;
  const episodes = await prisma.episode.findMany({
    where: { scopeId, ...eligibleEpisodes(deps.consolidator?.maxAttempts ?? DEFAULT_CONSOLIDATION_ATTEMPTS) },
    orderBy: [{ timestamp: 'asc' }, { id: 'asc' }],
    take: CAPPED_EPISODES_PER_RUN,
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
      outcome = { status: 'failed', detail: `capped memory failed: ${errorText(error)}` };
      run.log.error('capped-mode memory creation failed; the conversation stays for a later run', { scopeId, error });
      break;
    }
  }
  const dreaming = await run.dream(scopeId, ctx, responses, llm);
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
