/**
 * `/sleep`, `/pause` and `/resume`: the owner's hand on consolidation (the sleep scheduler does
 * the work; these only ask it). `/sleep` consolidates now, whatever the schedule, but still
 * honours a pause and the daily token budget; `/pause` stops the agent from learning from new
 * conversations until `/resume` (nothing is lost: messages are still stored).
 *
 * `where` names the channel in the audit reason (`Telegram`, `the terminal`).
 */
import { renderChangeSections } from '../../memory/digests/digest';
import type { DigestBook } from '../../memory/digests/digest-book';
import type { ConsolidationControl } from '../../memory/scopes/consolidation-control';
import { plainMarkdown } from '../digest-delivery';
import type { CommandScope } from './command-scope';
import type { NumberedLists } from './numbered-lists';

/** What `/sleep` uses: the scheduler that runs it, the digest book that says what the run changed, the numbers shown. */
export interface SleepNowServices {
  readonly scheduler: Pick<ConsolidationControl, 'consolidateNow'>;
  readonly digestBook: Pick<DigestBook, 'runChanges'>;
  readonly lists: NumberedLists;
}

/**
 * `/sleep`: consolidates the scope now; returns the answer. A run that went through says what it
 * learned, changed and let fade, in the digest's words and numbering (its audit events, read by
 * the digest book), and those numbers become the list `/forget N` and `/why N` refer to.
 */
export async function sleepNow(services: SleepNowServices, scope: Pick<CommandScope, 'id'>): Promise<string> {
  const outcome = await services.scheduler.consolidateNow(scope.id);
  const detail = outcome.detail ? ` (${outcome.detail})` : '';
  switch (outcome.status) {
    case 'succeeded': {
      const changes = outcome.runId ? await services.digestBook.runChanges(scope.id, outcome.runId) : { items: [], reinforced: 0 };
      const head = `Done: I went through our recent conversations${detail}.`;
      if (changes.items.length === 0 && changes.reinforced === 0) return `${head} Nothing in them changed what I know about you.`;
      services.lists.rememberPage(
        scope.id,
        null,
        changes.items.map((i) => ({ n: i.n, memoryId: i.memoryId })),
        new Date(),
        'sleep',
      );
      const sections = plainMarkdown(renderChangeSections(changes.items, changes.reinforced).join('\n'));
      const hint = changes.items.length > 0 ? ['', 'Reply /forget N to make me forget one, /why N to see where it came from.'] : [];
      return [head, '', sections, ...hint].join('\n');
    }
    case 'deferred':
      return `Not now: today's thinking budget is spent${detail}. I will catch up tomorrow.`;
    case 'skipped':
      return `Nothing to do${detail}.`;
    default:
      return `That did not work${detail}. I will try again while I sleep.`;
  }
}

/** `/pause`: stops learning from the scope's conversations; returns the answer. */
export async function pauseLearning(scheduler: Pick<ConsolidationControl, 'pause'>, scopeId: string, where: string): Promise<string> {
  const changed = await scheduler.pause(scopeId, `the owner sent /pause in ${where}`);
  return changed
    ? 'Paused: I will not learn anything new from our conversations until you send /resume. I still keep what you write, and I still answer.'
    : 'Learning is already paused. /resume starts it again.';
}

/** `/resume`: learns from the scope's conversations again; returns the answer. */
export async function resumeLearning(scheduler: Pick<ConsolidationControl, 'resume'>, scopeId: string, where: string): Promise<string> {
  const changed = await scheduler.resume(scopeId, `the owner sent /resume in ${where}`);
  return changed ? 'Resumed: I will learn from our conversations again while I sleep.' : 'Learning was not paused.';
}
