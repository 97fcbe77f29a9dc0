/**
 * Reflection (seed 003, Generative Agents style): when the importance of the person's episodes
 * consolidated since the last reflection, counting the batch being consolidated now, adds up to
 * 150 (importance 0-1 counted as 0-10), that batch's consolidation prompt also asks for up to
 * three higher-level insights, each citing its evidence episodes (prompt.ts `INSIGHTS_REQUEST`).
 *
 * Reflection has no call of its own: it rides on the consolidation call that reads the episodes
 * anyway (issue 15: a separate call was a fifth of the memory's calls). Insights follow every rule
 * a new memory does (plan.ts, apply-plan.ts): source "inferred", confidence at most 0.6, evidence
 * only from the person's own turns, an M-id cited as evidence refused and logged, injection
 * attempts refused, no restating a known memory. When the batch is applied, a `reflection`
 * SleepRun row (no calls of its own) is written in the same transaction: the count starts again.
 *
 * Capped scopes (seed 001: one memory per conversation, a fixed number kept) make no consolidation
 * call and do not reflect: an insight would take one of the few places from what the person said.
 */
import type { Episode, PrismaClient } from '../storage/prisma';
import type { Tx } from '../memory/memories/memory-writer';

export const REFLECTION_THRESHOLD = 150;
/** Importance 0-1 counted on seed 003's 0-10 scale. */
const POINTS_PER_IMPORTANCE = 10;

export interface ReflectionDue {
  readonly due: boolean;
  /** Importance points since the last reflection, the batch's own included. */
  readonly accumulated: number;
}

/** Importance consolidated since the last reflection, on seed 003's 0-10-per-episode scale. */
export async function importanceSinceReflection(prisma: PrismaClient, scopeId: string): Promise<{ since: Date | null; total: number }> {
  const last = await prisma.sleepRun.findFirst({ where: { scopeId, kind: 'reflection', status: 'succeeded' }, orderBy: { startedAt: 'desc' } });
  const since = last?.startedAt ?? null;
  const sum = await prisma.episode.aggregate({
    where: { scopeId, consolidated: true, role: 'user', consolidatedAt: since ? { gt: since } : undefined },
    _sum: { importance: true },
  });
  return { since, total: (sum._sum.importance ?? 0) * POINTS_PER_IMPORTANCE };
}

/**
 * Whether the batch about to be consolidated makes reflection due: what was consolidated since
 * the last reflection plus the person's episodes of the batch (their importance at ingest; the
 * model refines it in the same answer).
 */
export async function reflectionDue(prisma: PrismaClient, scopeId: string, batch: readonly Episode[]): Promise<ReflectionDue> {
  const { total } = await importanceSinceReflection(prisma, scopeId);
  const own = batch.filter((e) => e.role === 'user').reduce((n, e) => n + e.importance, 0) * POINTS_PER_IMPORTANCE;
  const accumulated = total + own;
  return { due: accumulated >= REFLECTION_THRESHOLD, accumulated };
}

/**
 * Records a reflection in the transaction that applies its batch, so the count starts again. Its
 * start is the batch's `consolidatedAt` (origin.now): the batch's episodes are not counted twice.
 * Other batches of the same run share that time and are not counted toward the next reflection
 * either (a run holds more than one batch only with a backlog of over 100 episodes).
 */
export async function recordReflection(
  tx: Tx,
  scopeId: string,
  origin: { readonly runId?: string; readonly now: Date },
  stats: { readonly insights: number; readonly accumulated: number },
): Promise<void> {
  await tx.sleepRun.create({
    data: {
      scopeId,
      kind: 'reflection',
      status: 'succeeded',
      startedAt: origin.now,
      finishedAt: origin.now,
      llmCalls: 0,
      stats: { insights: stats.insights, importance: Math.round(stats.accumulated), foldedIntoRun: origin.runId ?? null },
    },
  });
}
