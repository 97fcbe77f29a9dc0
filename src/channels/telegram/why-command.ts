/** `/why N` on Telegram (the explanation: src/channels/commands/why.ts). */
import type { Composer } from 'grammy';
import { answerWhy } from '../commands/why';
import { sendText } from './send-text';
import type { CommandDeps, NocturneContext } from './telegram-context';

/** Registers `/why N`. */
export function registerWhyCommand(composer: Composer<NocturneContext>, deps: CommandDeps): void {
  composer.command('why', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await answerWhy(deps.core.db.prisma, deps.lists, ctx.scope, ctx.match));
  });
}
