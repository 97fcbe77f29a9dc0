/** `/why N` on Telegram (the explanation: src/channels/commands/why.ts). */
import type { Composer } from 'grammy';
import { answerWhy, type WhyServices } from '../commands/why';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

/** Registers `/why N`. */
export function registerWhyCommand(composer: Composer<NocturneContext>, services: WhyServices): void {
  composer.command('why', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await answerWhy(services, ctx.scope, ctx.match));
  });
}
