/**
 * The consolidation job of one scope (seed 003's compacting phase): consolidation batches, each
 * one transaction, until the scope is done, wakes up, or its token budget is spent, then the
 * dreaming phase when a batch was applied; a capped scope instead remembers each ended
 * conversation (`capped-consolidation.ts`). Every call of the job (prompts, repair turns,
 * dreaming) is checked against the day's budget first. The report goes to the run's row.
 */
import type { LlmResponse } from '../llm/language-model';
import { scopeSettingsSchema } from '../memory/scopes/scope-settings';
import type { Logger } from '../shared/logger';
import { plural } from '../shared/plural';
import { consolidateCapped } from './capped-consolidation';
import type { Consolidator } from './consolidation/consolidator';
import { addCounts, errorText, recordConsolidationReport, type ConsolidationReport } from './consolidation-report';
import type { DreamPhase } from './dream-phase';
import type { SleepJobContext, SleepJobOutcome } from './sleep-jobs';
import type { SleepServiceDeps } from './sleep-service';
import { withTokenBudget, type BudgetedModel } from './token-budget';

/** Runs the consolidation job of a scope and returns its report (also written to the run's row). */
export type ConsolidationJob = (scopeId: string, ctx: SleepJobContext) => Promise<ConsolidationReport>;

/** The report of a job that had no model to consolidate with (a fresh one each time: callers may add to it). */
function noModelReport(): ConsolidationReport {
  return {
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
}

/** The consolidation job on the sleep service's stores; without a consolidator (no model) it skips. */
export function createConsolidationJob(
  deps: SleepServiceDeps,
  parts: { readonly consolidator: Consolidator | undefined; readonly dream: DreamPhase; readonly log: Logger },
): ConsolidationJob {
  const { prisma } = deps;
  const { dream, log } = parts;

  async function memoryCapOf(scopeId: string): Promise<number | undefined> {
    const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { settings: true } });
    const parsed = scopeSettingsSchema.safeParse(scope?.settings ?? {});
    return parsed.success ? parsed.data.memoryCap : undefined;
  }

  /** Consolidation batches until the scope is done, wakes up or the budget is spent; then dreaming. */
  async function consolidateBatches(consolidator: Consolidator, scopeId: string, ctx: SleepJobContext, llm: BudgetedModel): Promise<ConsolidationReport> {
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
      if (r.status === 'failed') outcome = { status: 'failed', detail: `consolidation failed, nothing applied: ${errorText(r.error)}` };
      break;
    }
    const dreaming = batches > 0 ? await dream(scopeId, ctx, responses, llm) : {};
    // From the model's own count: includes calls of a batch that failed (their tokens were spent too).
    const u = llm.spent();
    return { batches, episodes, llmCalls: u.calls, inputTokens: u.inputTokens, outputTokens: u.outputTokens, counts, rejected, outcome, dreaming };
  }

  return async function consolidateScope(scopeId, ctx) {
    const started = Date.now();
    let report: ConsolidationReport;
    if (!parts.consolidator) report = noModelReport();
    else {
      // Every call of the job (prompts, repair turns, dreaming) is checked against the budget first.
      const llm = withTokenBudget(deps.llm!, ctx.tokenBudgetLeft);
      const cap = await memoryCapOf(scopeId);
      report =
        cap !== undefined
          ? await consolidateCapped(deps, { log, dream }, { scopeId, cap, ctx, llm })
          : await consolidateBatches(parts.consolidator, scopeId, ctx, llm);
    }
    await recordConsolidationReport(prisma, log, { scopeId, ctx, startedMs: started }, report);
    return report;
  };
}
