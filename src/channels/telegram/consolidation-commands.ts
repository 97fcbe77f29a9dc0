/** `/sleep`, `/pause` and `/resume` on Telegram (the logic and wording: src/channels/commands/consolidation.ts). */
import type { Composer } from 'grammy';
import type { ConsolidationControl } from '../../memory/scopes/consolidation-control';
import { pauseLearning, resumeLearning, sleepNow, type SleepNowServices } from '../commands/consolidation';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';

/** Registers `/sleep`, `/pause` and `/resume`. */
export function registerConsolidationCommands(
  composer: Composer<NocturneContext>,
  deps: SleepNowServices & { scheduler: Pick<ConsolidationControl, 'consolidateNow' | 'pause' | 'resume'> },
): void {
  const { scheduler } = deps;

  composer.command('sleep', async (ctx) => {
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    await sendText(ctx.api, ctx.chat.id, await sleepNow(deps, ctx.scope));
  });

  composer.command('pause', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await pauseLearning(scheduler, ctx.scope.id, WHERE));
  });

  composer.command('resume', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await resumeLearning(scheduler, ctx.scope.id, WHERE));
  });
}
