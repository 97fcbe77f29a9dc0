/**
 * `/fix N new text`, `/pin N` and `/unpin N` on Telegram (the logic and wording:
 * src/channels/commands/fix.ts). In a group, a member who is not one of its administrators
 * changes only the memories about them (group-member.ts), the same rule as `/forget`.
 */
import type { Composer } from 'grammy';
import { answerFix, answerPin, type FixServices } from '../commands/fix';
import { memberReach, speakerOf } from './group-member';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';

/** Registers `/fix`, `/pin` and `/unpin`. */
export function registerFixCommands(composer: Composer<NocturneContext>, services: FixServices): void {
  composer.command('fix', async (ctx) => {
    const speakerId = speakerOf(await memberReach(ctx));
    await sendText(ctx.api, ctx.chat.id, await answerFix(services, { scope: ctx.scope, where: WHERE, speakerId }, ctx.match));
  });
  for (const name of ['pin', 'unpin'] as const) {
    composer.command(name, async (ctx) => {
      const speakerId = speakerOf(await memberReach(ctx));
      await sendText(ctx.api, ctx.chat.id, await answerPin(services, { scope: ctx.scope, where: WHERE, speakerId }, ctx.match, name === 'pin'));
    });
  }
}
