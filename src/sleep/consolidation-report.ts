/**
 * What a consolidation job reports: the figures of its run (batches, episodes, model calls and
 * tokens, counts of what changed, refused operations, the dreaming steps), written to the job's
 * SleepRun row and one log line, and returned to the CLI and tests.
 */
import type { Logger } from '../shared/logger';
import type { PrismaClient } from '../storage/prisma';
import type { SleepJobContext, SleepJobOutcome } from './sleep-jobs';

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

/** Refused operations kept on the SleepRun row (the log line of each batch has them all). */
const MAX_REJECTED_ON_ROW = 50;

/** Adds the counts of `from` to those of `into`. */
export function addCounts(into: Record<string, number>, from: Record<string, number> | undefined): void {
  for (const [k, v] of Object.entries(from ?? {})) into[k] = (into[k] ?? 0) + v;
}

/** An error as the one line a report or run row keeps of it. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Writes `report` to the job's SleepRun row and logs that the job finished. */
export async function recordConsolidationReport(
  prisma: PrismaClient,
  log: Logger,
  run: { readonly scopeId: string; readonly ctx: SleepJobContext; readonly startedMs: number },
  report: ConsolidationReport,
): Promise<void> {
  const { scopeId, ctx } = run;
  await prisma.sleepRun.updateMany({
    where: { id: ctx.runId },
    data: {
      episodeCount: report.episodes,
      llmCalls: report.llmCalls,
      inputTokens: report.inputTokens,
      outputTokens: report.outputTokens,
      stats: {
        batches: report.batches,
        ...report.counts,
        ...report.dreaming,
        rejected: report.rejected.slice(0, MAX_REJECTED_ON_ROW),
        durationMs: Date.now() - run.startedMs,
      },
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
}
