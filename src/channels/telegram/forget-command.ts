/**
 * `/forget` on Telegram (the logic and wording: src/channels/commands/forget.ts).
 *
 * - `/forget 3`: item 3 of the list seen last, and `/forget my ex`: the memories that mention
 *   those words. Either way the memories that would go are shown with two buttons: "Forget"
 *   removes exactly them, "Keep" drops the request. A pending confirmation lives in memory for ten minutes and
 *   only works in the chat (scope) that asked for it. After the press the question is edited, so
 *   the matched text does not stay in the chat either.
 */
import { randomBytes } from 'node:crypto';
import { InlineKeyboard, type Composer } from 'grammy';
import type { ForgetPreview, ForgetService } from '../../memory/forget/forget-service';
import { confirmForget, FORGET_KEPT_TEXT, FORGET_USAGE, forgetReason, parseForgetArgument, previewForgetNumber, previewForgetWords } from '../commands/forget';
import type { NumberSources } from '../commands/numbered-lists';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const CONFIRM_TTL_MS = 10 * 60_000;
const MAX_PENDING = 1_000;
const REASON = forgetReason('Telegram');

interface PendingForget {
  readonly scopeId: string;
  readonly preview: ForgetPreview;
  readonly expiresAt: number;
}

/** Registers `/forget` and its confirmation buttons (`fg:y:<token>`, `fg:n:<token>`). */
export function registerForgetCommand(
  composer: Composer<NocturneContext>,
  deps: NumberSources & { forget: Pick<ForgetService, 'prepareForget' | 'forgetMatching'> },
): void {
  const { forget, lists, digestBook } = deps;
  const pending = new Map<string, PendingForget>();

  function remember(entry: PendingForget): string {
    const now = Date.now();
    for (const [token, p] of pending) if (p.expiresAt < now) pending.delete(token);
    if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value!);
    const token = randomBytes(9).toString('base64url');
    pending.set(token, entry);
    return token;
  }

  composer.command('forget', async (ctx) => {
    const request = parseForgetArgument(ctx.match);
    if (request.kind === 'usage') {
      await sendText(ctx.api, ctx.chat.id, FORGET_USAGE);
      return;
    }
    const answer =
      request.kind === 'number'
        ? await previewForgetNumber({ lists, digestBook, forget, scope: ctx.scope, n: request.n })
        : await previewForgetWords(forget, ctx.scope.id, request.words);
    if (answer.kind === 'answer') {
      await sendText(ctx.api, ctx.chat.id, answer.text);
      return;
    }
    const count = answer.preview.matches.length;
    const token = remember({ scopeId: ctx.scope.id, preview: answer.preview, expiresAt: Date.now() + CONFIRM_TTL_MS });
    // With no memory matched, the button stands for the messages that mention the words: "it".
    const keyboard = new InlineKeyboard().text(`Forget ${count <= 1 ? 'it' : `all ${count}`}`, `fg:y:${token}`).text('Keep', `fg:n:${token}`);
    await sendText(ctx.api, ctx.chat.id, answer.text, { replyMarkup: keyboard });
  });

  composer.callbackQuery(/^fg:[yn]:/, async (ctx) => {
    const [, answer, token] = ctx.callbackQuery.data.split(':');
    const entry = token ? pending.get(token) : undefined;
    if (!entry || entry.expiresAt < Date.now() || entry.scopeId !== ctx.scope.id) {
      await ctx.answerCallbackQuery({ text: 'This question has expired; send /forget again.' });
      await ctx.editMessageReplyMarkup().catch(() => undefined);
      return;
    }
    pending.delete(token!);
    if (answer === 'n') {
      await ctx.answerCallbackQuery({ text: 'Kept.' });
      await ctx.editMessageText(FORGET_KEPT_TEXT);
      return;
    }
    await ctx.answerCallbackQuery({ text: 'Forgetting…' });
    // The edit replaces the list of matches, so their text does not stay in the chat either.
    await ctx.editMessageText(await confirmForget(entry.preview, REASON));
  });
}
