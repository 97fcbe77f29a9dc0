/** `/sleep`, `/pause` and `/resume` on Telegram (the logic and wording: src/channels/commands/consolidation.ts). */
import type { Composer } from 'grammy';
import type { ConsolidationControl } from '../../memory/scopes/consolidation-control';
import { pauseLearning, resumeLearning, sleepNow, type SleepNowServices } from '../commands/consolidation';
import { withTypingKeptAlive } from './keep-typing';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';
/** Said while a long `/sleep` runs, so the chat is not silent. */
export const SLEEP_STATUS_TEXT = 'Sorting through our recent conversations; this can take a minute. I will tell you what I learned.';

/** Registers `/sleep`, `/pause` and `/resume`. */
export function registerConsolidationCommands(
  composer: Composer<NocturneContext>,
  deps: SleepNowServices & { scheduler: Pick<ConsolidationControl, 'consolidateNow' | 'pause' | 'resume'> },
): void {
  const { scheduler } = deps;

  composer.command('sleep', async (ctx) => {
    const answer = await withTypingKeptAlive(ctx.api, ctx.chat.id, SLEEP_STATUS_TEXT, () => sleepNow(deps, ctx.scope));
    await sendText(ctx.api, ctx.chat.id, answer);
  });

  composer.command('pause', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await pauseLearning(scheduler, ctx.scope.id, WHERE));
  });

  composer.command('resume', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await resumeLearning(scheduler, ctx.scope.id, WHERE));
  });
}
