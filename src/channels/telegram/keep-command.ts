/**
 * Answering the digest's "Which is true?" on Telegram (the logic and wording:
 * src/channels/commands/keep.ts): one tap on a button under the digest, or `/keep N`.
 *
 * A button's callback data is `kp:<memory id>`: the memory the person says is true, never its
 * text (Telegram keeps callback data on its servers and limits it to 64 bytes). A press works
 * only in the chat whose scope holds that memory (any other scope reads it as "not in a
 * conflict"), settles every open conflict the memory is in, and removes that question's row of
 * buttons (when the press carries the keyboard), so the other questions can still be answered.
 */
import { InlineKeyboard, type Composer } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { DigestItem } from '../../memory/digests/digest';
import type { ConflictBook } from '../../memory/memories/conflict-book';
import { answerKeep, keepMemory } from '../commands/keep';
import type { NumberSources } from '../commands/numbered-lists';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const WHERE = 'Telegram';
/** The prefix of a keep button's callback data. */
const KEEP_PREFIX = 'kp:';

/** One row per question of a digest ("3 is true", "4 is true"); undefined when it asks none. */
export function conflictKeyboard(items: readonly DigestItem[]): InlineKeyboardMarkup | undefined {
  const sides = items.filter((i) => i.action === 'conflict');
  if (sides.length === 0) return undefined;
  const keyboard = new InlineKeyboard();
  const shown = new Set<string>();
  for (const side of sides) {
    const other = sides.find((s) => s.memoryId === side.refs?.[0] && s.refs?.[0] === side.memoryId);
    if (!other || shown.has(side.memoryId)) continue;
    shown.add(side.memoryId).add(other.memoryId);
    keyboard.text(`${side.n} is true`, `${KEEP_PREFIX}${side.memoryId}`).text(`${other.n} is true`, `${KEEP_PREFIX}${other.memoryId}`).row();
  }
  return keyboard;
}

/** Registers `/keep N` and the digest's keep buttons. */
export function registerKeepCommand(composer: Composer<NocturneContext>, deps: NumberSources & { conflicts: Pick<ConflictBook, 'keep'> }): void {
  const { conflicts, lists, digestBook } = deps;

  composer.command('keep', async (ctx) => {
    await sendText(ctx.api, ctx.chat.id, await answerKeep({ conflicts, lists, digestBook, scope: ctx.scope, argument: ctx.match, where: WHERE }));
  });

  composer.callbackQuery(/^kp:/, async (ctx) => {
    const data = ctx.callbackQuery.data;
    const memoryId = data.slice(KEEP_PREFIX.length);
    const answer = await keepMemory(conflicts, ctx.scope, memoryId, WHERE);
    await ctx.answerCallbackQuery({ text: 'Noted.' });
    // Only this question's row goes: the digest's other questions keep their buttons. A press
    // handled from the update record has no keyboard (telegram-update-worker.ts keeps no message
    // content): the buttons stay, and a press on a settled question changes nothing.
    const rows = ctx.callbackQuery.message?.reply_markup?.inline_keyboard;
    if (rows) {
      const left = rows.filter((row) => !row.some((b) => 'callback_data' in b && b.callback_data === data));
      await ctx.editMessageReplyMarkup(left.length > 0 ? { reply_markup: { inline_keyboard: left } } : undefined).catch(() => undefined);
    }
    if (ctx.chat) await sendText(ctx.api, ctx.chat.id, answer);
  });
}
