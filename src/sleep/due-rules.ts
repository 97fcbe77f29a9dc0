/**
 * The rules that say whether a scope is due for a sleep job, each returning the reason when it is
 * not: idleness (consolidation waits until nobody is talking), what is pending and the sleep
 * window (consolidation), and the digest of a period (made once, retried a bounded number of times).
 *
 * Why apart from the scheduler: a rule is checked twice, once when a tick plans the work and again
 * under the lease on a fresh read of the scope (another process may have acted in between), so it
 * must be one function both places call.
 */
import { MAX_FUTURE_SKEW_MS } from '../memory/episodes/normalize';
import { isInSleepWindow, nextWindowOpening } from '../shared/local-time';
import type { ScopeSettings } from '../memory/scopes/scope-settings';
import type { PrismaClient, Scope } from '../storage/prisma';

/** Due, or not with the reason (reported per scope in the tick report). */
export type Decision = { due: true } | { due: false; reason: string };

/**
 * Whether a scope's lastMessageAt is a time a message can have had: not beyond the allowed clock
 * skew ahead of `now`. An older version stored any timestamp (year 9999 froze a scope: never idle,
 * never consolidated); such a value counts as no time at all, and the next message replaces it.
 */
export function plausibleLastMessage(lastMessageAt: Date | null, now: Date): Date | null {
  if (!lastMessageAt || lastMessageAt.getTime() > now.getTime() + MAX_FUTURE_SKEW_MS) return null;
  return lastMessageAt;
}

/**
 * Due once the scope has had no message for its idle minutes (a scope never written to is idle,
 * and so is one whose lastMessageAt is impossibly far in the future: see plausibleLastMessage).
 */
export function idleDecision(scope: Scope, settings: ScopeSettings, now: Date): Decision {
  const lastMessageAt = plausibleLastMessage(scope.lastMessageAt, now);
  if (!lastMessageAt) return { due: true };
  const idleSince = now.getTime() - lastMessageAt.getTime();
  if (idleSince >= settings.idleMinutes * 60_000) return { due: true };
  const minutes = Math.floor(idleSince / 60_000);
  return { due: false, reason: `not idle: last message ${minutes} min ago (needs ${settings.idleMinutes})` };
}

/**
 * Whether the digest of the period ending at `periodEnd` is still to be made: not yet written, not
 * handled by a run since, and tried fewer than `maxAttempts` times.
 */
export async function digestDecision(prisma: PrismaClient, scopeId: string, periodEnd: Date, maxAttempts: number): Promise<Decision> {
  const period = periodEnd.toISOString();
  const digest = await prisma.digest.findUnique({
    where: { scopeId_periodEnd: { scopeId, periodEnd } },
    select: { status: true },
  });
  if (digest) return { due: false, reason: `digest for ${period} already written (${digest.status})` };
  const runs = await prisma.sleepRun.findMany({
    where: { scopeId, kind: 'digest', startedAt: { gte: periodEnd } },
    select: { status: true },
  });
  if (runs.some((run) => run.status === 'succeeded' || run.status === 'skipped')) {
    return { due: false, reason: `digest for ${period} already handled` };
  }
  const tries = runs.filter((run) => run.status === 'failed' || run.status === 'deferred').length;
  if (tries >= maxAttempts) return { due: false, reason: `digest for ${period} gave up after ${tries} attempts` };
  return { due: true };
}

const HOUR_MS = 3_600_000;

/** What a scope has waiting for consolidation: episodes below the attempts cap. */
export interface PendingEpisodes {
  /** Unconsolidated episodes of either role. */
  readonly count: number;
  /** The oldest unconsolidated message of the person (role `user`); null when only agent turns wait. */
  readonly oldestFromPerson: Date | null;
}

/** The schedule's two numbers (SLEEP_MIN_EPISODES, SLEEP_MAX_WAIT_HOURS). */
export interface ConsolidationThresholds {
  readonly minEpisodes: number;
  readonly maxWaitHours: number;
}

/**
 * Whether what a scope has pending is worth consolidating now, judged on its resolved settings
 * (zone and window resolved once, by the caller): inside its sleep window, and either a batch of
 * `minEpisodes`, or a person's message that would wait longer than `maxWaitHours` if it were left
 * for the next night's window. The look-ahead is what keeps the wait under its bound: a run can
 * only happen in a window, so a message said at noon is either learned tonight or 39 hours later,
 * and "24 hours old" checked tonight would let it wait the 39. Agent turns alone never make a run
 * due by waiting: they are learned with the person's next message. A scope without a window is
 * judged at each tick against `now`.
 */
export function consolidationDecision(pending: PendingEpisodes, settings: ScopeSettings, thresholds: ConsolidationThresholds, now: Date): Decision {
  const { count, oldestFromPerson } = pending;
  const window = settings.sleepWindow;
  const deadlineBy = window ? nextWindowOpening(now, window, settings.timeZone) : now;
  const waitMs = thresholds.maxWaitHours * HOUR_MS;
  const tooLong = oldestFromPerson !== null && oldestFromPerson.getTime() + waitMs <= deadlineBy.getTime();
  if (count < thresholds.minEpisodes && !tooLong) {
    const waited = oldestFromPerson ? `, the person's oldest ${Math.floor((now.getTime() - oldestFromPerson.getTime()) / HOUR_MS)} h old` : '';
    return {
      due: false,
      reason:
        `${count} unconsolidated episodes${waited} (needs ${thresholds.minEpisodes}, or a message that would wait over ` +
        `${thresholds.maxWaitHours} h${window ? ' by the next sleep window' : ''})`,
    };
  }
  if (window && !isInSleepWindow(now, window, settings.timeZone)) {
    return { due: false, reason: `outside the sleep window (${window.startHour}:00 for ${window.durationHours} h, ${settings.timeZone})` };
  }
  return { due: true };
}
