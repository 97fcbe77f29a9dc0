/**
 * `/memories` on Telegram: the page text (src/channels/commands/memories.ts) with inline buttons
 * that page back and forth and filter by category; a button press edits the same message rather
 * than sending a new one.
 *
 * Button data is `mem:<page>:<category>` (empty category: all), with `+` after the page when the
 * listing holds faded memories too (`/memories --all`). A category whose name would make the data
 * longer than Telegram's 64 bytes gets no button (the list still shows it).
 *
 * In a group a member who is not one of its administrators sees only the memories about them
 * (group-member.ts), on every page the buttons turn to as well.
 */
import { InlineKeyboard, type Composer } from 'grammy';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import { parseMemoriesFlags, renderMemoryList } from '../commands/memories';
import type { NumberedLists } from '../commands/numbered-lists';
import { catalogFor, memberListHeading, memberReach } from './group-member';
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

function callbackData(page: number, category: string | null, withFaded: boolean): string {
  return `${CALLBACK_PREFIX}:${page}${withFaded ? '+' : ''}:${category ?? ''}`;
}

/** The page and filter of a button's data, or null when the data is not ours. */
export function parseMemoriesCallback(data: string): { page: number; category: string | null; withFaded: boolean } | null {
  const match = /^mem:(\d{1,6})(\+?):(.*)$/s.exec(data);
  if (!match) return null;
  return { page: Number(match[1]), category: match[3] === '' ? null : match[3]!, withFaded: match[2] === '+' };
}

/**
 * Renders page `page` (0-based, clamped) of the scope's current memories (and faded ones, with
 * `withFaded`), filtered by `category`, with its buttons.
 */
export async function renderMemoryPage(
  catalog: Pick<MemoryCatalog, 'page' | 'categories'>,
  scope: { id: string; timeZone: string },
  page: number,
  category: string | null,
  withFaded = false,
): Promise<MemoryPage> {
  const list = await renderMemoryList(catalog, scope, page, category, withFaded);
  const shown = list.page;
  const data = (n: number, c: string | null) => callbackData(n, c, withFaded);
  const keyboard = new InlineKeyboard();
  if (shown > 0) keyboard.text('« Previous', data(shown - 1, category));
  if (shown < list.pages - 1) keyboard.text('Next »', data(shown + 1, category));
  const categories = list.categories.filter((c) => Buffer.byteLength(data(0, c)) <= MAX_CALLBACK_BYTES);
  if (categories.length > 1 || category) {
    keyboard.row();
    const buttons = [
      { label: category === null ? '• all' : 'all', data: data(0, null) },
      ...categories.map((c) => ({ label: c === category ? `• ${c}` : c, data: data(0, c) })),
    ];
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
    const { withFaded, rest } = parseMemoriesFlags(ctx.match);
    const category = rest.toLowerCase() || null;
    const reach = await memberReach(ctx);
    const page = await renderMemoryPage(catalogFor(catalog, reach), ctx.scope, 0, category, withFaded);
    deps.lists.rememberPage(ctx.scope.id, category, page.entries, new Date());
    const heading = memberListHeading(reach);
    await sendText(ctx.api, ctx.chat.id, heading ? `${heading}\n\n${page.text}` : page.text, { replyMarkup: page.keyboard });
  });

  composer.callbackQuery(/^mem:/, async (ctx) => {
    const wanted = parseMemoriesCallback(ctx.callbackQuery.data);
    if (!wanted) {
      await ctx.answerCallbackQuery();
      return;
    }
    // The one who presses sees their own reach: a member's press never pages through another's memories.
    const reach = await memberReach(ctx);
    const page = await renderMemoryPage(catalogFor(catalog, reach), ctx.scope, wanted.page, wanted.category, wanted.withFaded);
    deps.lists.rememberPage(ctx.scope.id, wanted.category, page.entries, new Date());
    await ctx.answerCallbackQuery();
    const heading = memberListHeading(reach);
    try {
      await ctx.editMessageText(heading ? `${heading}\n\n${page.text}` : page.text, {
        reply_markup: page.keyboard,
        link_preview_options: { is_disabled: true },
      });
    } catch (error) {
      // Pressing the button of the page already shown: Telegram refuses an edit that changes nothing.
      if (!/message is not modified/i.test((error as Error).message)) throw error;
    }
  });
}
