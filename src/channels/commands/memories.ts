/**
 * `/memories`: what the agent believes now, most confident first, ten to a page, each line with
 * its number (for `/forget N` and `/why N`), the text, the category, the confidence and the date
 * of the first message it came from. The texts are the catalog's (secrets filtered). This
 * renders a page's text and says what the page holds; how the person moves between pages
 * (Telegram's buttons, the terminal's `/memories next`) is the channel's.
 *
 * `/memories --all` also lists the memories that have faded (kept for deep recall), after the
 * current ones and marked `[faded]`: the person can see what the agent no longer brings up by
 * itself, `/why N` or `/forget N` one, or ask "do you remember…" to bring it back. Listing them
 * does not revive them: a listing is an inventory, not a recall of one thing.
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
  /** Faded memories are listed too (`--all`). */
  readonly withFaded: boolean;
  /** Every category of the scope's current memories, alphabetically. */
  readonly categories: readonly string[];
  /** The numbers the page showed and their memories (for `/forget N` and `/why N`). */
  readonly entries: ReadonlyArray<{ n: number; memoryId: string }>;
}

/** How a pinned memory (`/pin N`) is marked in the list. */
export const PINNED_MARK = '📌';

/** The flag that lists faded memories too. */
export const WITH_FADED_FLAG = '--all';

/** Splits `--all` off a `/memories` argument: `"--all fact"` -> with faded, `"fact"`. */
export function parseMemoriesFlags(argument: string): { withFaded: boolean; rest: string } {
  const words = argument
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '');
  const rest = words.filter((w) => w.toLowerCase() !== WITH_FADED_FLAG);
  return { withFaded: rest.length < words.length, rest: rest.join(' ') };
}

/**
 * Renders page `page` (0-based, clamped) of the scope's current memories, filtered by `category`;
 * with `withFaded`, the faded ones follow, marked.
 */
export async function renderMemoryList(
  catalog: Pick<MemoryCatalog, 'page' | 'categories'>,
  scope: { id: string; timeZone: string },
  page: number,
  category: string | null,
  withFaded = false,
): Promise<MemoryList> {
  const wanted = Math.max(0, page);
  const pageOf = (n: number) => catalog.page(scope.id, { category, offset: n * MEMORIES_PAGE_SIZE, limit: MEMORIES_PAGE_SIZE, withFaded });
  const [asked, categories] = await Promise.all([pageOf(wanted), catalog.categories(scope.id)]);
  const total = asked.total;
  const pages = Math.max(1, Math.ceil(total / MEMORIES_PAGE_SIZE));
  const shown = Math.min(wanted, pages - 1);
  // A page past the end shows the last one.
  const rows = shown === wanted ? asked.lines : (await pageOf(shown)).lines;
  const entries = rows.map((row, i) => ({ n: shown * MEMORIES_PAGE_SIZE + i + 1, memoryId: row.id }));

  const filter = `${category ? ` in “${category}”` : ''}${withFaded ? ', faded ones too' : ''}`;
  let text: string;
  if (total === 0) {
    text =
      category || withFaded
        ? `No ${withFaded ? '' : 'current '}memories${filter}.`
        : 'I have no memories of our conversations yet. I learn while I sleep: talk to me, and after a quiet while (or /sleep) what I learned shows up here.';
  } else {
    const lines = rows.map((row, i) => {
      const date = formatLocalMinute(row.firstHeardAt ?? row.validFrom, scope.timeZone).slice(0, 10);
      const faded = row.faded ? '[faded] ' : '';
      const pin = row.pinned ? `${PINNED_MARK} ` : '';
      return `${entries[i]!.n}. ${pin}${faded}${excerpt(row.content, MAX_LINE_CHARS)}\n    ${row.category} · confidence ${row.confidence.toFixed(2)} · from ${date}`;
    });
    const first = entries[0]!.n;
    const last = entries[entries.length - 1]!.n;
    const footer = ['Reply /forget N to make me forget one, /why N to see where it came from, /fix N new text to correct it, /pin N to keep it.'];
    if (rows.some((row) => row.faded)) footer.push('Ask me “do you remember …” to bring a faded one back.');
    text = [`Memories${filter} ${first}–${last} of ${total} (page ${shown + 1}/${pages})`, '', ...lines, '', ...footer].join('\n');
  }
  return { text, page: shown, pages, category, withFaded, categories, entries };
}
