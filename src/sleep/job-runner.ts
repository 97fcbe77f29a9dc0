/**
 * Runs one sleep job on one scope the safe way: under a database lease (`<kind>:<scopeId>`) so
 * two processes never do the same work, after a fresh recheck of the rule that made it due, within
 * the scope's daily token budget, with a SleepRun row that records it, and with a wake-up watch so
 * a message arriving mid-run stops the job after its current batch.
 *
 * The scheduler decides which scopes are due; this file owns what "running a job" means, so every
 * path that starts one (the three ticks and `/sleep`) gets the same guarantees.
 */
import { uuidv7 } from '../shared/ids';
import type { Logger } from '../shared/logger';
import type { PrismaClient, Scope } from '../storage/prisma';
import type { ScopeSettings } from '../memory/scopes/scope-settings';
import type { Leases } from './lease';
import type { SleepJobContext, SleepJobKind, SleepJobOutcome, SleepJobs } from './sleep-jobs';
import type { ScopeRunReport } from './tick-report';
import type { TokenBudget } from './token-budget';
import { plausibleLastMessage, type Decision } from './due-rules';

/** The error of a run found still `running` when its lease is taken again: its process died. */
const INTERRUPTED = 'interrupted: the process stopped during the run (nothing of an unfinished batch was applied)';

/** One job to run: which kind, on which scope, and the rule to check again under the lease. */
export interface JobPlan {
  readonly kind: SleepJobKind;
  readonly scope: Scope;
  readonly settings: ScopeSettings;
  readonly now: Date;
  readonly periodEnd?: Date;
  /** Checked again under the lease, on a fresh read of the scope (another process may have acted). */
  readonly recheck: (fresh: Scope) => Promise<Decision> | Decision;
}

/** What the runner needs; `isStopping` is the scheduler's flag, read whenever a job asks to go on. */
export interface JobRunnerDeps {
  readonly prisma: PrismaClient;
  readonly jobs: SleepJobs;
  readonly leases: Leases;
  readonly budgets: TokenBudget;
  readonly logger: Logger;
  readonly clock: () => Date;
  /** How often a running job's scope is checked for a new message. */
  readonly wakeCheckMs: number;
  readonly isStopping: () => boolean;
}

/** Runs one job on one scope under its lease, recording a SleepRun; never throws for the job's sake. */
export type RunJob = (plan: JobPlan) => Promise<ScopeRunReport>;

/** The runner of the scheduler's jobs. */
export function createJobRunner(deps: JobRunnerDeps): RunJob {
  const { prisma, jobs, leases, budgets, logger, clock } = deps;

  /** Polls the scope for a message newer than `since`, so a synchronous shouldContinue can answer. */
  function watchForWake(scopeId: string, since: Date): { woke(): boolean; stop(): Promise<void> } {
    let woke = false;
    let checking: Promise<void> | undefined;
    const check = async (): Promise<void> => {
      try {
        const row = await prisma.scope.findUnique({ where: { id: scopeId }, select: { lastMessageAt: true } });
        const last = plausibleLastMessage(row?.lastMessageAt ?? null, clock());
        if (last && last.getTime() > since.getTime()) {
          woke = true;
          logger.info('scope woke up (a message arrived); the running job stops after its batch', { scopeId });
        }
      } catch (error) {
        logger.warn('could not check the scope for new messages', { scopeId, error });
      }
    };
    const timer = setInterval(() => {
      if (woke || checking) return;
      checking = check().finally(() => {
        checking = undefined;
      });
    }, deps.wakeCheckMs);
    timer.unref();
    return {
      woke: () => woke,
      async stop() {
        clearInterval(timer);
        await checking;
      },
    };
  }

  async function deferForBudget(plan: JobPlan, spent: number, budget: number, dayStart: Date): Promise<ScopeRunReport> {
    const { scope, now } = plan;
    const detail = `daily token budget spent (${spent} of ${budget} tokens)`;
    const already = await prisma.sleepRun.findFirst({
      where: {
        scopeId: scope.id,
        kind: plan.kind,
        status: 'deferred',
        startedAt: { gte: dayStart },
        error: { startsWith: 'daily token budget spent' },
      },
      select: { id: true },
    });
    if (already) {
      logger.debug('consolidation still deferred: daily token budget spent', {
        scopeId: scope.id,
        scope: scope.key,
        spent,
        budget,
      });
      return { scopeId: scope.id, scopeKey: scope.key, status: 'deferred', detail, runId: already.id };
    }
    const runId = uuidv7();
    await prisma.sleepRun.create({
      data: {
        id: runId,
        scopeId: scope.id,
        kind: plan.kind,
        status: 'deferred',
        startedAt: now,
        finishedAt: now,
        error: detail,
      },
    });
    logger.warn('consolidation deferred: daily token budget spent', {
      scopeId: scope.id,
      scope: scope.key,
      spent,
      budget,
    });
    return { scopeId: scope.id, scopeKey: scope.key, status: 'deferred', detail, runId };
  }

  async function runJob(plan: JobPlan): Promise<ScopeRunReport> {
    const { kind, scope, settings, now } = plan;
    const base = { scopeId: scope.id, scopeKey: scope.key };
    const result = await leases.withLease(`${kind}:${scope.id}`, async (lease): Promise<ScopeRunReport> => {
      const fresh = await prisma.scope.findUnique({ where: { id: scope.id } });
      if (!fresh) return { ...base, status: 'not-due', detail: 'the scope was deleted' };
      const decision = await plan.recheck(fresh);
      if (!decision.due) return { ...base, status: 'not-due', detail: decision.reason };

      const budget = await budgets.status({
        scopeId: scope.id,
        now,
        timeZone: settings.timeZone,
        dailyBudget: settings.dailyTokenBudget,
      });
      if (kind === 'consolidate' && budget.left <= 0) {
        return deferForBudget(plan, budget.spent, budget.budget, budget.dayStart);
      }

      // We hold the lease, so a run of this kind still marked running died with its process.
      await prisma.sleepRun.updateMany({
        where: { scopeId: scope.id, kind, status: 'running' },
        data: { status: 'failed', finishedAt: now, error: INTERRUPTED },
      });
      const runId = uuidv7();
      await prisma.sleepRun.create({ data: { id: runId, scopeId: scope.id, kind, status: 'running', startedAt: now } });
      const wake = watchForWake(scope.id, now);
      const ctx: SleepJobContext = {
        now,
        runId,
        tokenBudgetLeft: budget.left,
        periodEnd: plan.periodEnd,
        shouldContinue: () => !deps.isStopping() && !lease.lost() && !wake.woke(),
      };
      logger.info(`${kind} started`, { ...base, runId, tokenBudgetLeft: budget.left });
      let outcome: SleepJobOutcome;
      try {
        outcome = await jobs[kind](scope.id, ctx);
      } catch (error) {
        logger.error(`${kind} failed`, { ...base, runId, error });
        outcome = { status: 'failed', detail: error instanceof Error ? error.message : String(error) };
      } finally {
        await wake.stop();
      }
      await prisma.sleepRun.update({
        where: { id: runId },
        data: {
          status: outcome.status,
          finishedAt: clock(),
          error: outcome.status === 'succeeded' ? null : (outcome.detail ?? null),
        },
      });
      logger.info(`${kind} ${outcome.status}`, { ...base, runId, detail: outcome.detail, woke: wake.woke() });
      return { ...base, status: outcome.status, detail: outcome.detail, runId };
    });
    if (result.acquired) return result.value;
    logger.debug(`${kind} skipped: another process holds the lease`, { ...base, heldBy: result.heldBy });
    return { ...base, status: 'busy', detail: `lease held by ${result.heldBy ?? 'another process'}` };
  }

  return runJob;
}
