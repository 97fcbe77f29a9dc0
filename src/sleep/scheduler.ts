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
 * (`job-runner.ts`). The rules that make a scope due are in `due-rules.ts`; what a tick reports
 * is in `tick-report.ts`.
 */
import { Cron } from 'croner';
import { NotFoundError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { PrismaClient, Scope } from '../storage/prisma';
import { createLeases, type Leases } from './lease';
import { ScopeSettingsError, type ScopeSettings } from '../memory/scopes/scope-settings';
import { DEFAULT_CONSOLIDATION_ATTEMPTS, eligibleEpisodes, exhaustedEpisodes, requirePolicy } from '../memory/scopes/scope-policy';
import { consolidationDecision, digestDecision, idleDecision, type PendingEpisodes } from './due-rules';
import { createJobRunner } from './job-runner';
import type { SleepJobKind, SleepJobs } from './sleep-jobs';
import type { ScopeRunReport, SleepTickReport } from './tick-report';
import { digestInstant, type SleepWindow } from '../shared/local-time';
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
  const digestDue = (scopeId: string, periodEnd: Date) => digestDecision(prisma, scopeId, periodEnd, options.maxAttempts);

  /** Remembers running work until it settles, so stop() can wait for it. */
  function track<T>(work: Promise<T>): Promise<T> {
    const tracked: Promise<T> = work.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    return tracked;
  }

  function settingsOf(scope: Scope): ScopeSettings {
    return requirePolicy(scope, {
      digestTime: options.digestTime,
      dailyTokenBudget: options.dailyTokenBudget,
      idleMinutes: options.idleMinutes,
      timeZone: options.defaultTimeZone,
      consolidationAttempts: options.maxAttempts,
      ...(options.defaultSleepWindow && { sleepWindow: options.defaultSleepWindow }),
    });
  }

  /** Runs `body` unless a tick of the same kind is running; one failing scope never ends the tick. */
  function tick(kind: SleepJobKind, now: Date, body: (now: Date) => Promise<Omit<SleepTickReport, 'kind' | 'startedAt' | 'busy'>>): Promise<SleepTickReport> {
    const idle: SleepTickReport = { kind, startedAt: now, busy: true, scopes: [], exhausted: [] };
    if (stopping) return Promise.resolve(idle);
    if (runningTicks.has(kind)) {
      logger.debug(`${kind} tick skipped: the previous one is still running`);
      return Promise.resolve(idle);
    }
    const work = body(now)
      .then((result): SleepTickReport => ({ kind, startedAt: now, busy: false, ...result }))
      .catch((error: unknown): SleepTickReport => {
        logger.error(`${kind} tick failed`, { error });
        return { kind, startedAt: now, busy: false, scopes: [], exhausted: [], error: error instanceof Error ? error.message : String(error) };
      })
      .finally(() => runningTicks.delete(kind));
    runningTicks.set(kind, work);
    return track(work);
  }

  /** Walks scopes one at a time; a scope whose planning or job throws is logged and skipped. */
  async function forEachScope(
    kind: SleepJobKind,
    scopes: Scope[],
    visit: (scope: Scope, settings: ScopeSettings) => Promise<ScopeRunReport | undefined>,
  ): Promise<ScopeRunReport[]> {
    const reports: ScopeRunReport[] = [];
    for (const scope of scopes) {
      if (stopping) break;
      let settings: ScopeSettings;
      try {
        settings = settingsOf(scope);
      } catch (error) {
        if (!(error instanceof ScopeSettingsError)) throw error;
        logger.error(`${kind} skipped a scope with invalid settings`, { scopeId: scope.id, scope: scope.key, error: error.message });
        reports.push({ scopeId: scope.id, scopeKey: scope.key, status: 'invalid-settings', detail: error.message });
        continue;
      }
      try {
        const report = await visit(scope, settings);
        if (report) reports.push(report);
      } catch (error) {
        logger.error(`${kind} failed for a scope; continuing with the others`, { scopeId: scope.id, scope: scope.key, error });
        reports.push({ scopeId: scope.id, scopeKey: scope.key, status: 'failed', detail: error instanceof Error ? error.message : String(error) });
      }
    }
    return reports;
  }

  async function consolidationTick(now: Date) {
    const scopes = await prisma.scope.findMany({ where: { paused: false }, orderBy: { createdAt: 'asc' } });
    const countBy = async (which: ReturnType<typeof eligibleEpisodes> | ReturnType<typeof exhaustedEpisodes>, role?: string) => {
      const groups = await prisma.episode.groupBy({
        by: ['scopeId'],
        where: { ...which, ...(role && { role }) },
        _count: { _all: true },
        _min: { timestamp: true },
      });
      return new Map(groups.map((g) => [g.scopeId, { count: g._count._all, oldest: g._min.timestamp }]));
    };
    const pending = await countBy(eligibleEpisodes(options.maxAttempts));
    const fromPerson = await countBy(eligibleEpisodes(options.maxAttempts), 'user');
    const stuck = await countBy(exhaustedEpisodes(options.maxAttempts));
    const thresholds = { minEpisodes: options.minEpisodes, maxWaitHours: options.maxWaitHours };

    const exhausted: { scopeId: string; scopeKey: string; episodes: number }[] = [];
    for (const scope of scopes) {
      const episodes = stuck.get(scope.id)?.count;
      if (!episodes) continue;
      exhausted.push({ scopeId: scope.id, scopeKey: scope.key, episodes });
      logger.warn('episodes left unconsolidated after too many failed attempts', {
        scopeId: scope.id,
        scope: scope.key,
        episodes,
        maxAttempts: options.maxAttempts,
      });
    }

    const reports = await forEachScope('consolidate', scopes, async (scope, settings) => {
      const notDue = (reason: string): ScopeRunReport => ({ scopeId: scope.id, scopeKey: scope.key, status: 'not-due', detail: reason });
      const waiting: PendingEpisodes = {
        count: pending.get(scope.id)?.count ?? 0,
        oldestFromPerson: fromPerson.get(scope.id)?.oldest ?? null,
      };
      const worth = consolidationDecision(waiting, settings, thresholds, now);
      if (!worth.due) return notDue(worth.reason);
      const idle = idleDecision(scope, settings, now);
      if (!idle.due) return notDue(idle.reason);
      return runJob({
        kind: 'consolidate',
        scope,
        settings,
        now,
        recheck: (fresh) => (fresh.paused ? { due: false, reason: 'paused' } : idleDecision(fresh, settings, now)),
      });
    });
    return { scopes: reports, exhausted };
  }

  async function decayTick(now: Date) {
    // Paused scopes included on purpose: see the module comment.
    const scopes = await prisma.scope.findMany({ orderBy: { createdAt: 'asc' } });
    const reports = await forEachScope('decay', scopes, (scope, settings) => runJob({ kind: 'decay', scope, settings, now, recheck: () => ({ due: true }) }));
    return { scopes: reports, exhausted: [] };
  }

  async function digestTick(now: Date) {
    const scopes = await prisma.scope.findMany({ where: { ownerId: { not: null } }, orderBy: { createdAt: 'asc' } });
    const reports = await forEachScope('digest', scopes, async (scope, settings) => {
      if (!settings.digestEnabled) return undefined;
      const periodEnd = digestInstant(now, settings.digestTime, settings.timeZone);
      if (now.getTime() < periodEnd.getTime()) return undefined;
      // Set (or moved by a new zone) after today's instant: due at the next one.
      if (settings.digestFrom && periodEnd.getTime() < settings.digestFrom.getTime()) return undefined;
      const decision = await digestDue(scope.id, periodEnd);
      if (!decision.due) return undefined;
      return runJob({ kind: 'digest', scope, settings, now, periodEnd, recheck: () => digestDue(scope.id, periodEnd) });
    });
    if (reports.some((r) => r.status === 'succeeded')) {
      for (const listener of digestListeners) {
        try {
          await listener();
        } catch (error) {
          logger.error('a digest listener failed', { error });
        }
      }
    }
    return { scopes: reports, exhausted: [] };
  }

  async function setPaused(scopeId: string, paused: boolean, reason: string | undefined): Promise<boolean> {
    const changed = await prisma.$transaction(async (tx) => {
      const updated = await tx.scope.updateMany({ where: { id: scopeId, paused: !paused }, data: { paused } });
      if (updated.count === 0) return false;
      await tx.auditEvent.create({
        data: {
          scopeId,
          action: paused ? 'pause' : 'resume',
          subjectType: 'scope',
          subjectId: scopeId,
          before: { paused: !paused },
          after: { paused },
          reason: reason ?? null,
          createdAt: clock(),
        },
      });
      return true;
    });
    if (!changed && !(await prisma.scope.findUnique({ where: { id: scopeId }, select: { id: true } }))) {
      throw new NotFoundError(`No scope with id ${scopeId}`, { code: 'scope.not_found' });
    }
    if (changed) logger.info(paused ? 'consolidation paused' : 'consolidation resumed', { scopeId, reason });
    return changed;
  }

  function scheduleCron(kind: SleepJobKind, pattern: string, run: () => Promise<SleepTickReport>): Cron {
    return new Cron(
      pattern,
      {
        protect: () => logger.debug(`${kind} cron skipped a firing: the previous run is still going`),
        catch: (error) => logger.error(`${kind} cron failed`, { error }),
        timezone: options.defaultTimeZone,
      },
      async () => {
        await run();
      },
    );
  }

  return {
    start() {
      if (crons.length > 0) return;
      stopping = false;
      crons = [
        scheduleCron('consolidate', options.consolidateCron, () => tick('consolidate', clock(), consolidationTick)),
        scheduleCron('decay', options.decayCron, () => tick('decay', clock(), decayTick)),
        scheduleCron('digest', options.digestCheckCron, () => tick('digest', clock(), digestTick)),
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

    runConsolidation: (now) => tick('consolidate', now ?? clock(), consolidationTick),
    runDecay: (now) => tick('decay', now ?? clock(), decayTick),
    runDigests: (now) => tick('digest', now ?? clock(), digestTick),

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

    pause: (scopeId, reason) => setPaused(scopeId, true, reason),
    resume: (scopeId, reason) => setPaused(scopeId, false, reason),

    onDigestsBuilt(listener) {
      digestListeners.add(listener);
      return () => void digestListeners.delete(listener);
    },
  };
}
