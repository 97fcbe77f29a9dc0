/**
 * `/forget` on Telegram (the logic and wording: src/channels/commands/forget.ts).
 *
 * - `/forget 3`: item 3 of the list seen last, and `/forget my ex`: the memories that mention
 *   those words. Either way the memories that would go are shown with two buttons: "Forget"
 *   removes exactly them, "Keep" drops the request. A pending confirmation lives in memory for ten minutes and
 *   only works in the chat (scope) that asked for it. After the press the question is edited, so
 *   the matched text does not stay in the chat either.
 * - In a group, a member who is not one of its administrators reaches only the memories about
 *   them (group-member.ts), and only the one who asked can press the answer.
 */
import { randomBytes } from 'node:crypto';
import { InlineKeyboard, type Composer } from 'grammy';
import type { ForgetPreview, ForgetService } from '../../memory/forget/forget-service';
import { confirmForget, FORGET_KEPT_TEXT, FORGET_USAGE, forgetReason, parseForgetArgument, previewForgetNumber, previewForgetWords } from '../commands/forget';
import { lookupNumber, type NumberSources } from '../commands/numbered-lists';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import { memberReach, notYoursText, speakerOf } from './group-member';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const CONFIRM_TTL_MS = 10 * 60_000;
const MAX_PENDING = 1_000;
const REASON = forgetReason('Telegram');

interface PendingForget {
  readonly scopeId: string;
  /** Who asked: in a group nobody else may confirm it for them. */
  readonly askedBy: number | undefined;
  readonly preview: ForgetPreview;
  readonly expiresAt: number;
}

/** Registers `/forget` and its confirmation buttons (`fg:y:<token>`, `fg:n:<token>`). */
export function registerForgetCommand(
  composer: Composer<NocturneContext>,
  deps: NumberSources & { forget: Pick<ForgetService, 'prepareForget' | 'forgetMatching'>; catalog: Pick<MemoryCatalog, 'isAbout'> },
): void {
  const { forget, lists, digestBook, catalog } = deps;
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
    const speakerId = speakerOf(await memberReach(ctx));
    if (request.kind === 'number' && speakerId !== undefined) {
      const found = await lookupNumber({ lists, digestBook }, ctx.scope.id, request.n);
      if (found.found && !(await catalog.isAbout(ctx.scope.id, found.memoryId, speakerId))) {
        await sendText(ctx.api, ctx.chat.id, notYoursText(request.n));
        return;
      }
    }
    const answer =
      request.kind === 'number'
        ? await previewForgetNumber({ lists, digestBook, forget, scope: ctx.scope, n: request.n })
        : await previewForgetWords(forget, ctx.scope.id, request.words, speakerId);
    if (answer.kind === 'answer') {
      await sendText(ctx.api, ctx.chat.id, answer.text);
      return;
    }
    const count = answer.preview.matches.length;
    const token = remember({ scopeId: ctx.scope.id, askedBy: ctx.from?.id, preview: answer.preview, expiresAt: Date.now() + CONFIRM_TTL_MS });
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
    if (ctx.chat?.type !== 'private' && entry.askedBy !== undefined && ctx.from.id !== entry.askedBy) {
      await ctx.answerCallbackQuery({ text: 'Only the one who asked can answer this.' });
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
