/**
 * What each of the scheduler's three ticks does: which scopes it walks, which of them are due
 * (the rules are `due-rules.ts`), and the job it runs on each through the job runner. The
 * scheduler (`scheduler.ts`) decides when a tick runs and that two of a kind never overlap.
 *
 * A tick walks the scopes one at a time: a scope whose stored settings are invalid is reported as
 * such, and a scope whose planning or job throws is logged and reported as failed; neither ends
 * the tick for the others.
 */
import type { Logger } from '../shared/logger';
import type { PrismaClient, Scope } from '../storage/prisma';
import { ScopeSettingsError, type ScopeSettings } from '../memory/scopes/scope-settings';
import { eligibleEpisodes, exhaustedEpisodes } from '../memory/scopes/scope-policy';
import { digestInstant } from '../shared/local-time';
import { consolidationDecision, digestDecision, idleDecision, type ConsolidationThresholds, type PendingEpisodes } from './due-rules';
import type { RunJob } from './job-runner';
import type { SleepJobKind } from './sleep-jobs';
import type { ScopeRunReport, SleepTickReport } from './tick-report';

/** What a tick found: the report without what the scheduler adds (kind, start, busy). */
export type TickResult = Omit<SleepTickReport, 'kind' | 'startedAt' | 'busy'>;

/** What the ticks read and run through; the scheduler builds it once. */
export interface TickContext {
  readonly prisma: PrismaClient;
  readonly logger: Logger;
  readonly runJob: RunJob;
  /** The scheduler's flag: a stopping scheduler starts no further scope. */
  readonly isStopping: () => boolean;
  /** The scope's resolved settings; throws `ScopeSettingsError` for a stored field that is invalid. */
  readonly settingsOf: (scope: Scope) => ScopeSettings;
  /** SLEEP_MAX_ATTEMPTS: the episodes' cap, and the digest retries' per day. */
  readonly maxAttempts: number;
  readonly thresholds: ConsolidationThresholds;
  /** Told after a digest tick that built at least one digest to send. */
  readonly digestListeners: ReadonlySet<() => Promise<unknown> | undefined>;
}

/** Walks scopes one at a time; a scope whose planning or job throws is logged and skipped. */
async function forEachScope(
  ctx: TickContext,
  kind: SleepJobKind,
  scopes: Scope[],
  visit: (scope: Scope, settings: ScopeSettings) => Promise<ScopeRunReport | undefined>,
): Promise<ScopeRunReport[]> {
  const { logger } = ctx;
  const reports: ScopeRunReport[] = [];
  for (const scope of scopes) {
    if (ctx.isStopping()) break;
    let settings: ScopeSettings;
    try {
      settings = ctx.settingsOf(scope);
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

/** Consolidation: every scope not paused, if enough is pending, it is idle and in its window. */
export async function consolidationTick(ctx: TickContext, now: Date): Promise<TickResult> {
  const { prisma, logger, maxAttempts } = ctx;
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
  const pending = await countBy(eligibleEpisodes(maxAttempts));
  const fromPerson = await countBy(eligibleEpisodes(maxAttempts), 'user');
  const stuck = await countBy(exhaustedEpisodes(maxAttempts));

  const exhausted: { scopeId: string; scopeKey: string; episodes: number }[] = [];
  for (const scope of scopes) {
    const episodes = stuck.get(scope.id)?.count;
    if (!episodes) continue;
    exhausted.push({ scopeId: scope.id, scopeKey: scope.key, episodes });
    logger.warn('episodes left unconsolidated after too many failed attempts', {
      scopeId: scope.id,
      scope: scope.key,
      episodes,
      maxAttempts,
    });
  }

  const reports = await forEachScope(ctx, 'consolidate', scopes, async (scope, settings) => {
    const notDue = (reason: string): ScopeRunReport => ({ scopeId: scope.id, scopeKey: scope.key, status: 'not-due', detail: reason });
    const waiting: PendingEpisodes = {
      count: pending.get(scope.id)?.count ?? 0,
      oldestFromPerson: fromPerson.get(scope.id)?.oldest ?? null,
    };
    const worth = consolidationDecision(waiting, settings, ctx.thresholds, now);
    if (!worth.due) return notDue(worth.reason);
    const idle = idleDecision(scope, settings, now);
    if (!idle.due) return notDue(idle.reason);
    return ctx.runJob({
      kind: 'consolidate',
      scope,
      settings,
      now,
      recheck: (fresh) => (fresh.paused ? { due: false, reason: 'paused' } : idleDecision(fresh, settings, now)),
    });
  });
  return { scopes: reports, exhausted };
}

/** Decay: every scope, paused ones too. */
export async function decayTick(ctx: TickContext, now: Date): Promise<TickResult> {
  // Paused scopes included on purpose: pausing stops learning, not fading (see scheduler.ts).
  const scopes = await ctx.prisma.scope.findMany({ orderBy: { createdAt: 'asc' } });
  const reports = await forEachScope(ctx, 'decay', scopes, (scope, settings) =>
    ctx.runJob({ kind: 'decay', scope, settings, now, recheck: () => ({ due: true }) }),
  );
  return { scopes: reports, exhausted: [] };
}

/** Digests: every scope with an owner and digests on, once per local day after its digest time. */
export async function digestTick(ctx: TickContext, now: Date): Promise<TickResult> {
  const { prisma, logger } = ctx;
  const digestDue = (scopeId: string, periodEnd: Date) => digestDecision(prisma, scopeId, periodEnd, ctx.maxAttempts);
  const scopes = await prisma.scope.findMany({ where: { ownerId: { not: null } }, orderBy: { createdAt: 'asc' } });
  const reports = await forEachScope(ctx, 'digest', scopes, async (scope, settings) => {
    if (!settings.digestEnabled) return undefined;
    const periodEnd = digestInstant(now, settings.digestTime, settings.timeZone);
    if (now.getTime() < periodEnd.getTime()) return undefined;
    // Set (or moved by a new zone) after today's instant: due at the next one.
    if (settings.digestFrom && periodEnd.getTime() < settings.digestFrom.getTime()) return undefined;
    const decision = await digestDue(scope.id, periodEnd);
    if (!decision.due) return undefined;
    return ctx.runJob({ kind: 'digest', scope, settings, now, periodEnd, recheck: () => digestDue(scope.id, periodEnd) });
  });
  if (reports.some((r) => r.status === 'succeeded')) {
    for (const listener of ctx.digestListeners) {
      try {
        await listener();
      } catch (error) {
        logger.error('a digest listener failed', { error });
      }
    }
  }
  return { scopes: reports, exhausted: [] };
}
