/**
 * `/sleep`, `/pause` and `/resume`: the owner's hand on consolidation (the sleep scheduler does
 * the work; these only ask it). `/sleep` consolidates now, whatever the schedule, but still
 * honours a pause and the daily token budget; `/pause` stops the agent from learning from new
 * conversations until `/resume` (nothing is lost: messages are still stored).
 *
 * `where` names the channel in the audit reason (`Telegram`, `the terminal`).
 */
import type { SleepScheduler } from '../../sleep/scheduler';

/** `/sleep`: consolidates the scope now; returns the answer. */
export async function sleepNow(scheduler: Pick<SleepScheduler, 'consolidateNow'>, scopeId: string): Promise<string> {
  const outcome = await scheduler.consolidateNow(scopeId);
  const detail = outcome.detail ? ` (${outcome.detail})` : '';
  switch (outcome.status) {
    case 'succeeded':
      return `Done: I went through our recent conversations${detail}. /memories shows what I know now.`;
    case 'deferred':
      return `Not now: today's thinking budget is spent${detail}. I will catch up tomorrow.`;
    case 'skipped':
      return `Nothing to do${detail}.`;
    default:
      return `That did not work${detail}. I will try again while I sleep.`;
  }
}

/** `/pause`: stops learning from the scope's conversations; returns the answer. */
export async function pauseLearning(scheduler: Pick<SleepScheduler, 'pause'>, scopeId: string, where: string): Promise<string> {
  const changed = await scheduler.pause(scopeId, `the owner sent /pause in ${where}`);
  return changed
    ? 'Paused: I will not learn anything new from our conversations until you send /resume. I still keep what you write, and I still answer.'
    : 'Learning is already paused. /resume starts it again.';
}

/** `/resume`: learns from the scope's conversations again; returns the answer. */
export async function resumeLearning(scheduler: Pick<SleepScheduler, 'resume'>, scopeId: string, where: string): Promise<string> {
  const changed = await scheduler.resume(scopeId, `the owner sent /resume in ${where}`);
  return changed ? 'Resumed: I will learn from our conversations again while I sleep.' : 'Learning was not paused.';
}
