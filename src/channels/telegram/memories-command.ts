/**
 * `/memories` on Telegram: the page text (src/channels/commands/memories.ts) with inline buttons
 * that page back and forth and filter by category; a button press edits the same message rather
 * than sending a new one.
 *
 * Button data is `mem:<page>:<category>` (empty category: all). A category whose name would make
 * the data longer than Telegram's 64 bytes gets no button (the list still shows it).
 */
import { InlineKeyboard, type Composer } from 'grammy';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import { renderMemoryList } from '../commands/memories';
import type { NumberedLists } from '../commands/numbered-lists';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const CALLBACK_PREFIX = 'mem';
const MAX_CALLBACK_BYTES = 64;

/** A rendered page: its text, its buttons, and the numbers it showed (for `/forget N`). */
export interface MemoryPage {
  readonly text: string;
  readonly keyboard: InlineKeyboard;
  readonly page: number;
  readonly entries: ReadonlyArray<{ n: number; memoryId: string }>;
}

function callbackData(page: number, category: string | null): string {
  return `${CALLBACK_PREFIX}:${page}:${category ?? ''}`;
}

/** The page and filter of a button's data, or null when the data is not ours. */
export function parseMemoriesCallback(data: string): { page: number; category: string | null } | null {
  const match = /^mem:(\d{1,6}):(.*)$/s.exec(data);
  if (!match) return null;
  return { page: Number(match[1]), category: match[2] === '' ? null : match[2]! };
}

/** Renders page `page` (0-based, clamped) of the scope's current memories, filtered by `category`, with its buttons. */
export async function renderMemoryPage(
  catalog: Pick<MemoryCatalog, 'page' | 'categories'>,
  scope: { id: string; timeZone: string },
  page: number,
  category: string | null,
): Promise<MemoryPage> {
  const list = await renderMemoryList(catalog, scope, page, category);
  const shown = list.page;
  const keyboard = new InlineKeyboard();
  if (shown > 0) keyboard.text('« Previous', callbackData(shown - 1, category));
  if (shown < list.pages - 1) keyboard.text('Next »', callbackData(shown + 1, category));
  const categories = list.categories.filter((c) => Buffer.byteLength(callbackData(0, c)) <= MAX_CALLBACK_BYTES);
  if (categories.length > 1 || category) {
    keyboard.row();
    const buttons = [{ label: category === null ? '• all' : 'all', data: callbackData(0, null) }, ...categories.map((c) => ({ label: c === category ? `• ${c}` : c, data: callbackData(0, c) }))];
    for (const [i, button] of buttons.entries()) {
      if (i > 0 && i % 3 === 0) keyboard.row();
      keyboard.text(button.label, button.data);
    }
  }
  return { text: list.text, keyboard, page: shown, entries: list.entries };
}

/** Registers `/memories` and its buttons. */
export function registerMemoriesCommand(
  composer: Composer<NocturneContext>,
  deps: { catalog: Pick<MemoryCatalog, 'page' | 'categories'>; lists: NumberedLists },
): void {
  const { catalog } = deps;

  composer.command('memories', async (ctx) => {
    const category = ctx.match.trim().toLowerCase() || null;
    const page = await renderMemoryPage(catalog, ctx.scope, 0, category);
    deps.lists.rememberPage(ctx.scope.id, category, page.entries, new Date());
    await sendText(ctx.api, ctx.chat.id, page.text, { replyMarkup: page.keyboard });
  });

  composer.callbackQuery(/^mem:/, async (ctx) => {
    const wanted = parseMemoriesCallback(ctx.callbackQuery.data);
    if (!wanted) {
      await ctx.answerCallbackQuery();
      return;
    }
    const page = await renderMemoryPage(catalog, ctx.scope, wanted.page, wanted.category);
    deps.lists.rememberPage(ctx.scope.id, wanted.category, page.entries, new Date());
    await ctx.answerCallbackQuery();
    try {
      await ctx.editMessageText(page.text, { reply_markup: page.keyboard, link_preview_options: { is_disabled: true } });
    } catch (error) {
      // Pressing the button of the page already shown: Telegram refuses an edit that changes nothing.
      if (!/message is not modified/i.test((error as Error).message)) throw error;
    }
  });
}
