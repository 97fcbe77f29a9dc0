/**
 * The sleep scheduler: decides when each scope is consolidated, decayed and sent its digest, and
 * runs that work (through the {@link SleepJobs} port) under the limits that keep it safe.
 *
 * Three croner crons call three ticks. A tick walks the scopes one at a time and, for each scope
 * that is due, runs one job under a database lease (`<kind>:<scopeId>`), so several processes can
 * share a database without doing the same work twice. Each tick kind runs alone (croner's
 * `protect`, and the same guard for ticks called directly); different kinds may overlap, and the
 * lease keeps them from running the same kind on the same scope twice.
 *
 * Rules (docs/sleep.md, "Schedule"):
 * - consolidation: the scope is not paused, idle (no message for idleMinutes), inside its sleep
 *   window (its own, else the service's), has at least minEpisodes unconsolidated episodes below
 *   the attempts cap (or fewer, the person's oldest of them would wait over maxWaitHours if left
 *   for the next window: `consolidationDecision`), and has tokens left today; without tokens the
 *   run is recorded as deferred, once a day. The job stops early (shouldContinue) when a message
 *   arrives or the service stops.
 * - decay: every scope, paused ones too. Pausing stops the agent from *learning* (reading new
 *   episodes into memories); decay only lets old, unreinforced memories fade, which is what a
 *   paused memory would do anyway, and skipping it would keep stale facts alive at full strength.
 * - digest: every scope with an owner and digests on, once per local day, after its local digest
 *   time (and not for an instant before its digest time or zone last changed). Listeners given to
 *   onDigestsBuilt hear about new digests at once, so a channel delivers them without waiting for
 *   its own timer.
 *
 * The scheduler owns the SleepRun row of every job it starts: created as `running` with id
 * ctx.runId before the job, given its final status (and the outcome's detail) after
 * (`job-runner.ts`). The rules that make a scope due are in `due-rules.ts`; what each tick does
 * with them is in `scheduler-ticks.ts`; what a tick reports is in `tick-report.ts`; pausing and
 * resuming a scope is `consolidation-pause.ts`.
 */
import { Cron } from 'croner';
import { NotFoundError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { PrismaClient, Scope } from '../storage/prisma';
import { createLeases, type Leases } from './lease';
import type { ScopeSettings } from '../memory/scopes/scope-settings';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, requirePolicy, type PolicyDefaults } from '../memory/scopes/scope-policy';
import { setConsolidationPaused } from './consolidation-pause';
import { createJobRunner } from './job-runner';
import { consolidationTick, decayTick, digestTick, type TickContext, type TickResult } from './scheduler-ticks';
import type { SleepJobKind, SleepJobs } from './sleep-jobs';
import type { SleepTickReport } from './tick-report';
import type { SleepWindow } from '../shared/local-time';
import { createTokenBudget } from './token-budget';
import type { ConsolidationControl, ConsolidationOutcome } from '../memory/scopes/consolidation-control';

/** The scheduler's settings; the composition root fills them from Config.sleep and Config.timeZone. */
export interface SleepSchedulerOptions {
  /** When consolidation looks for due scopes; default hourly (`0 * * * *`), so every zone's window is met. */
  readonly consolidateCron: string;
  /** When decay runs; default `30 3 * * *`. */
  readonly decayCron: string;
  /** How often due digests are looked for; default every minute (`* * * * *`), so a digest is at most a minute late. */
  readonly digestCheckCron: string;
  /** Minutes without a message before a scope may be consolidated; default 30. */
  readonly idleMinutes: number;
  /** Unconsolidated episodes that make a run due in the next window (a batch worth a model call); default 10. */
  readonly minEpisodes: number;
  /** Hours the person's oldest unconsolidated message may wait; a run is due with fewer episodes before that; default 24. */
  readonly maxWaitHours: number;
  /**
   * The nightly window of scopes that set none (the service's SLEEP_WINDOW_START / SLEEP_WINDOW_HOURS);
   * absent here: such scopes are consolidated at any tick.
   */
  readonly defaultSleepWindow?: SleepWindow;
  /** Episodes that failed this many times are left alone and reported; default 5. Also caps digest retries per day. */
  readonly maxAttempts: number;
  /** Tokens per scope per local day; 0 = unlimited; default 200000. */
  readonly dailyTokenBudget: number;
  /** HH:MM local to each scope; default `21:00`. */
  readonly digestTime: string;
  /** Zone of scopes without one, and of the crons; default UTC. */
  readonly defaultTimeZone: string;
  /** Time-to-live of job leases (renewed while the job runs); default 5 minutes. */
  readonly leaseTtlMs: number;
  /** How often a running job's scope is checked for a new message; default 5 seconds. */
  readonly wakeCheckMs: number;
}

export const defaultSleepSchedulerOptions: SleepSchedulerOptions = {
  consolidateCron: '0 * * * *',
  decayCron: '30 3 * * *',
  digestCheckCron: '* * * * *',
  idleMinutes: 30,
  minEpisodes: 10,
  maxWaitHours: 24,
  maxAttempts: DEFAULT_CONSOLIDATION_ATTEMPTS,
  dailyTokenBudget: 200_000,
  digestTime: '21:00',
  defaultTimeZone: 'UTC',
  leaseTtlMs: 5 * 60_000,
  wakeCheckMs: 5_000,
};

export interface SleepScheduler extends ConsolidationControl {
  /** Starts the three crons. */
  start(): void;
  /** Stops the crons, tells running jobs to stop after their batch, and waits for them. */
  stop(): Promise<void>;
  /** One consolidation tick (what the consolidation cron calls); `now` defaults to the clock. */
  runConsolidation(now?: Date): Promise<SleepTickReport>;
  /** One decay tick. */
  runDecay(now?: Date): Promise<SleepTickReport>;
  /** One digest check. */
  runDigests(now?: Date): Promise<SleepTickReport>;
  /**
   * Calls `listener` after each digest tick that built at least one digest to send (a channel's
   * sender delivers it right away). Returns a function that removes the listener. A listener's
   * failure is logged, never the tick's.
   */
  onDigestsBuilt(listener: () => Promise<unknown> | undefined): () => void;
}

/** How `consolidateNow` ended (the domain's type: the doors read it). */
export type ConsolidateNowOutcome = ConsolidationOutcome;

export interface SleepSchedulerDeps {
  readonly prisma: PrismaClient;
  readonly jobs: SleepJobs;
  readonly logger: Logger;
  readonly clock?: () => Date;
  readonly options?: Partial<SleepSchedulerOptions>;
  /** Defaults to database leases on `prisma` with this scheduler's clock. */
  readonly leases?: Leases;
}

export function createSleepScheduler(deps: SleepSchedulerDeps): SleepScheduler {
  const { prisma, jobs } = deps;
  const logger = deps.logger.child({ component: 'sleep-scheduler' });
  const clock = deps.clock ?? (() => new Date());
  const options: SleepSchedulerOptions = { ...defaultSleepSchedulerOptions, ...deps.options };
  const leases = deps.leases ?? createLeases({ prisma, clock, ttlMs: options.leaseTtlMs, logger });
  const budgets = createTokenBudget(prisma);

  let stopping = false;
  let crons: Cron[] = [];
  const runningTicks = new Map<SleepJobKind, Promise<SleepTickReport>>();
  const inFlight = new Set<Promise<unknown>>();
  const digestListeners = new Set<() => Promise<unknown> | undefined>();

  const runJob = createJobRunner({
    prisma,
    jobs,
    leases,
    budgets,
    logger,
    clock,
    wakeCheckMs: options.wakeCheckMs,
    isStopping: () => stopping,
  });
  const policyDefaults: PolicyDefaults = {
    digestTime: options.digestTime,
    dailyTokenBudget: options.dailyTokenBudget,
    idleMinutes: options.idleMinutes,
    timeZone: options.defaultTimeZone,
    consolidationAttempts: options.maxAttempts,
    ...(options.defaultSleepWindow && { sleepWindow: options.defaultSleepWindow }),
  };
  const settingsOf = (scope: Scope): ScopeSettings => requirePolicy(scope, policyDefaults);
  const ticks: TickContext = {
    prisma,
    logger,
    runJob,
    isStopping: () => stopping,
    settingsOf,
    maxAttempts: options.maxAttempts,
    thresholds: { minEpisodes: options.minEpisodes, maxWaitHours: options.maxWaitHours },
    digestListeners,
  };
  const bodies: Record<SleepJobKind, (now: Date) => Promise<TickResult>> = {
    consolidate: (now) => consolidationTick(ticks, now),
    decay: (now) => decayTick(ticks, now),
    digest: (now) => digestTick(ticks, now),
  };

  /** Remembers running work until it settles, so stop() can wait for it. */
  function track<T>(work: Promise<T>): Promise<T> {
    const tracked: Promise<T> = work.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    return tracked;
  }

  /** Runs `body` unless a tick of the same kind is running; one failing scope never ends the tick. */
  function tick(kind: SleepJobKind, now: Date): Promise<SleepTickReport> {
    const idle: SleepTickReport = { kind, startedAt: now, busy: true, scopes: [], exhausted: [] };
    if (stopping) return Promise.resolve(idle);
    if (runningTicks.has(kind)) {
      logger.debug(`${kind} tick skipped: the previous one is still running`);
      return Promise.resolve(idle);
    }
    const work = bodies[kind](now)
      .then((result): SleepTickReport => ({ kind, startedAt: now, busy: false, ...result }))
      .catch((error: unknown): SleepTickReport => {
        logger.error(`${kind} tick failed`, { error });
        return { kind, startedAt: now, busy: false, scopes: [], exhausted: [], error: error instanceof Error ? error.message : String(error) };
      })
      .finally(() => runningTicks.delete(kind));
    runningTicks.set(kind, work);
    return track(work);
  }

  const scheduleCron = (kind: SleepJobKind, pattern: string, run: () => Promise<SleepTickReport>): Cron =>
    cronOf(kind, pattern, options.defaultTimeZone, logger, run);

  return {
    start() {
      if (crons.length > 0) return;
      stopping = false;
      crons = [
        scheduleCron('consolidate', options.consolidateCron, () => tick('consolidate', clock())),
        scheduleCron('decay', options.decayCron, () => tick('decay', clock())),
        scheduleCron('digest', options.digestCheckCron, () => tick('digest', clock())),
      ];
      logger.info('sleep scheduler started', {
        consolidate: options.consolidateCron,
        decay: options.decayCron,
        digestCheck: options.digestCheckCron,
        next: crons[0]?.nextRun()?.toISOString(),
      });
    },

    async stop() {
      stopping = true;
      const wasRunning = crons.length > 0;
      for (const cron of crons) cron.stop();
      crons = [];
      await Promise.allSettled([...inFlight]);
      if (wasRunning) logger.info('sleep scheduler stopped');
    },

    runConsolidation: (now) => tick('consolidate', now ?? clock()),
    runDecay: (now) => tick('decay', now ?? clock()),
    runDigests: (now) => tick('digest', now ?? clock()),

    consolidateNow(scopeId) {
      const work = (async (): Promise<ConsolidateNowOutcome> => {
        if (stopping) return { status: 'skipped', detail: 'the service is stopping' };
        const scope = await prisma.scope.findUnique({ where: { id: scopeId } });
        if (!scope) throw new NotFoundError(`No scope with id ${scopeId}`, { code: 'scope.not_found' });
        if (scope.paused) return { status: 'skipped', detail: 'consolidation is paused for this scope' };
        const settings = settingsOf(scope);
        const report = await runJob({
          kind: 'consolidate',
          scope,
          settings,
          now: clock(),
          recheck: (fresh) => (fresh.paused ? { due: false, reason: 'consolidation is paused for this scope' } : { due: true }),
        });
        if (report.status === 'busy') return { status: 'skipped', detail: 'a consolidation of this scope is already running' };
        if (report.status === 'not-due' || report.status === 'invalid-settings') return { status: 'skipped', detail: report.detail };
        return { status: report.status, detail: report.detail, runId: report.runId };
      })();
      return track(work);
    },

    pause: (scopeId, reason) => setConsolidationPaused({ prisma, clock, logger }, scopeId, true, reason),
    resume: (scopeId, reason) => setConsolidationPaused({ prisma, clock, logger }, scopeId, false, reason),

    onDigestsBuilt(listener) {
      digestListeners.add(listener);
      return () => void digestListeners.delete(listener);
    },
  };
}

/** A croner job that runs one kind of tick; a firing while the previous run goes on is skipped. */
function cronOf(kind: SleepJobKind, pattern: string, timezone: string, logger: Logger, run: () => Promise<SleepTickReport>): Cron {
  return new Cron(
    pattern,
    {
      protect: () => logger.debug(`${kind} cron skipped a firing: the previous run is still going`),
      catch: (error) => logger.error(`${kind} cron failed`, { error }),
      timezone,
    },
    async () => {
      await run();
    },
  );
}
