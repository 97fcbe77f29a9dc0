/**
 * `/memories`: what the agent believes now, most confident first, ten to a page, each line with
 * its number (for `/forget N` and `/why N`), the text, the category, the confidence and the date
 * of the first message it came from. The texts are the catalog's (secrets filtered). This
 * renders a page's text and says what the page holds; how the person moves between pages
 * (Telegram's buttons, the terminal's `/memories next`) is the channel's.
 */
import { formatLocalMinute } from '../../memory/digests/digest';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import { excerpt } from './command-scope';

/** Memories per page: ten lines stay well under Telegram's 4,096 characters. */
export const MEMORIES_PAGE_SIZE = 10;
const MAX_LINE_CHARS = 300;

/** A rendered page of `/memories`. */
export interface MemoryList {
  readonly text: string;
  /** The page shown, 0-based (the page asked for, clamped to the pages there are). */
  readonly page: number;
  /** How many pages the filter has (at least 1). */
  readonly pages: number;
  readonly category: string | null;
  /** Every category of the scope's current memories, alphabetically. */
  readonly categories: readonly string[];
  /** The numbers the page showed and their memories (for `/forget N` and `/why N`). */
  readonly entries: ReadonlyArray<{ n: number; memoryId: string }>;
}

/** Renders page `page` (0-based, clamped) of the scope's current memories, filtered by `category`. */
export async function renderMemoryList(
  catalog: Pick<MemoryCatalog, 'page' | 'categories'>,
  scope: { id: string; timeZone: string },
  page: number,
  category: string | null,
): Promise<MemoryList> {
  const wanted = Math.max(0, page);
  const pageOf = (n: number) =>
    catalog.page(scope.id, { category, offset: n * MEMORIES_PAGE_SIZE, limit: MEMORIES_PAGE_SIZE });
  const [asked, categories] = await Promise.all([pageOf(wanted), catalog.categories(scope.id)]);
  const total = asked.total;
  const pages = Math.max(1, Math.ceil(total / MEMORIES_PAGE_SIZE));
  const shown = Math.min(wanted, pages - 1);
  // A page past the end shows the last one.
  const rows = shown === wanted ? asked.lines : (await pageOf(shown)).lines;
  const entries = rows.map((row, i) => ({ n: shown * MEMORIES_PAGE_SIZE + i + 1, memoryId: row.id }));

  const filter = category ? ` in “${category}”` : '';
  let text: string;
  if (total === 0) {
    text = category
      ? `No current memories${filter}.`
      : 'I have no memories of our conversations yet. I learn while I sleep: talk to me, and after a quiet while (or /sleep) what I learned shows up here.';
  } else {
    const lines = rows.map((row, i) => {
      const date = formatLocalMinute(row.firstHeardAt ?? row.validFrom, scope.timeZone).slice(0, 10);
      return `${entries[i]!.n}. ${excerpt(row.content, MAX_LINE_CHARS)}\n    ${row.category} · confidence ${row.confidence.toFixed(2)} · from ${date}`;
    });
    const first = entries[0]!.n;
    const last = entries[entries.length - 1]!.n;
    text = [`Memories${filter} ${first}–${last} of ${total} (page ${shown + 1}/${pages})`, '', ...lines, '', 'Reply /forget N to make me forget one, /why N to see where it came from.'].join('\n');
  }
  return { text, page: shown, pages, category, categories, entries };
}
