/**
 * How many replies one person (one scope) may get: at most REPLY_RATE_PER_MINUTE in any 60
 * seconds and the scope policy's daily reply budget per local day (the scope's own, set with
 * `/settings budget replies N`, else REPLY_DAILY_BUDGET). Without a limit one person sending a burst made
 * one model call per message (hundreds a minute), spending the operator's money and starving
 * everyone else's replies.
 *
 * Counted from the agent's stored turns (the scope's `agent` episodes by the agent's clock), so a
 * restart or a second replica forgets nothing, and a simulated clock works as a real one. Checked
 * in one place, the agent's turn, which every channel goes through, after the person's message is
 * stored (nothing is lost) and before anything costs a model call.
 *
 * Over a limit the person gets ONE answer saying when they can continue; later messages until
 * then get none (an empty reply sends nothing), so a burst is not answered with a burst. Which
 * scopes were told is kept in memory: after a restart a person still over the limit is told once
 * more.
 */
import type { AgentConfig } from '../config/load-config';
import type { EpisodeService } from '../memory/episodes/episode-service';
import type { Scope } from '../memory/records';
import type { ScopePolicy } from '../memory/scopes/scope-policy';
import { startOfLocalDay } from '../shared/local-time';

const MINUTE_MS = 60_000;
/** Past any local day's length (23-25 hours), so the start of its day is the next local midnight. */
const INTO_NEXT_DAY_MS = 36 * 3_600_000;

/** Why a reply is not written now, and when it can be. */
export interface ReplyLimitReached {
  readonly reason: 'rate' | 'daily';
  /** When the person can get a reply again. */
  readonly until: Date;
  /** The answer to send, or '' when the person was told already. */
  readonly text: string;
}

export interface ReplyLimits {
  /**
   * Null when a reply may be written now; otherwise why not, and what to tell the person. The
   * local day (and the time the person is told) is in the zone of the turn's scope policy, and
   * the daily budget is the policy's, so a budget changed in any door counts from the next turn.
   */
  check(scope: Scope, policy: Pick<ScopePolicy, 'timeZone' | 'replyDailyBudget'>, now: Date): Promise<ReplyLimitReached | null>;
}

/** `at` as the person reads it: the local time, and the date when it is not today. */
function localTime(at: Date, now: Date, timeZone: string): string {
  const time = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }).format(at);
  const day = (d: Date) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);
  return `${day(at) === day(now) ? '' : `${day(at)} `}${time} (${timeZone})`;
}

export function createReplyLimits(deps: { episodes: Pick<EpisodeService, 'turnTimesSince'>; settings: Pick<AgentConfig, 'replyRatePerMinute'> }): ReplyLimits {
  const { replyRatePerMinute: rate } = deps.settings;
  /** Scope id -> the end of the limit the person was told about. */
  const told = new Map<string, number>();

  async function reached(scope: Scope, now: Date, timeZone: string, daily: number): Promise<Omit<ReplyLimitReached, 'text'> | null> {
    if (rate > 0) {
      const recent = await deps.episodes.turnTimesSince(scope.id, 'agent', new Date(now.getTime() - MINUTE_MS), rate);
      // The rate-th newest reply leaves the window 60 s after it was written.
      if (recent.length >= rate) return { reason: 'rate', until: new Date(recent[rate - 1]!.getTime() + MINUTE_MS) };
    }
    if (daily > 0) {
      const dayStart = startOfLocalDay(now, timeZone);
      const today = await deps.episodes.turnTimesSince(scope.id, 'agent', dayStart, daily);
      if (today.length >= daily) return { reason: 'daily', until: startOfLocalDay(new Date(dayStart.getTime() + INTO_NEXT_DAY_MS), timeZone) };
    }
    return null;
  }

  return {
    async check(scope, policy, now) {
      const { timeZone, replyDailyBudget: daily } = policy;
      if (rate === 0 && daily === 0) return null;
      const limit = await reached(scope, now, timeZone, daily);
      if (!limit) {
        told.delete(scope.id);
        return null;
      }
      const toldUntil = told.get(scope.id);
      if (toldUntil !== undefined && toldUntil > now.getTime()) return { ...limit, text: '' };
      told.set(scope.id, limit.until.getTime());
      const when = localTime(limit.until, now, timeZone);
      const text =
        limit.reason === 'rate'
          ? `You're writing faster than I can answer: I reply to at most ${rate} messages a minute. I'm saving everything you send, and I can answer again at ${when}.`
          : `We've reached today's limit of ${daily} replies. I'm saving everything you send, and I can answer again at ${when}.`;
      return { ...limit, text };
    },
  };
}
