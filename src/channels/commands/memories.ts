/**
 * `/memories`: what the agent believes now, most confident first, ten to a page, each line with
 * its number (for `/forget N` and `/why N`), the text, the category, the confidence and the date
 * of the first message it came from. This renders a page's text and says what the page holds;
 * how the person moves between pages (Telegram's buttons, the terminal's `/memories next`) is
 * the channel's.
 */
import type { PrismaClient } from '../../storage/prisma';
import { formatLocalMinute } from '../../memory/digests/digest';
import { KNOWLEDGE_ONLY } from '../../memory/memories/categories';
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

/** The first source episode's time of each memory (none when it has no sources, e.g. imported). */
async function sourceDates(prisma: PrismaClient, scopeId: string, memoryIds: readonly string[]): Promise<Map<string, Date>> {
  const sources = await prisma.memorySource.findMany({ where: { scopeId, memoryId: { in: [...memoryIds] } }, select: { memoryId: true, episode: { select: { timestamp: true } } } });
  const dates = new Map<string, Date>();
  for (const s of sources) {
    const known = dates.get(s.memoryId);
    if (!known || s.episode.timestamp < known) dates.set(s.memoryId, s.episode.timestamp);
  }
  return dates;
}

/** Renders page `page` (0-based, clamped) of the scope's current memories, filtered by `category`. */
export async function renderMemoryList(prisma: PrismaClient, scope: { id: string; timeZone: string }, page: number, category: string | null): Promise<MemoryList> {
  const current = { scopeId: scope.id, active: true, validTo: null };
  // The default list is what is known about the person; conversation summaries only by category.
  const where = category ? { ...current, category } : { ...current, ...KNOWLEDGE_ONLY };
  const [total, categoryRows] = await Promise.all([
    prisma.memory.count({ where }),
    prisma.memory.findMany({ where: current, distinct: ['category'], select: { category: true }, orderBy: { category: 'asc' } }),
  ]);
  const pages = Math.max(1, Math.ceil(total / MEMORIES_PAGE_SIZE));
  const shown = Math.min(Math.max(0, page), pages - 1);
  const rows = await prisma.memory.findMany({
    where,
    orderBy: [{ confidence: 'desc' }, { validFrom: 'asc' }, { id: 'asc' }],
    skip: shown * MEMORIES_PAGE_SIZE,
    take: MEMORIES_PAGE_SIZE,
    select: { id: true, category: true, content: true, confidence: true, validFrom: true },
  });
  const dates = await sourceDates(prisma, scope.id, rows.map((r) => r.id));
  const entries = rows.map((row, i) => ({ n: shown * MEMORIES_PAGE_SIZE + i + 1, memoryId: row.id }));

  const filter = category ? ` in “${category}”` : '';
  let text: string;
  if (total === 0) {
    text = category
      ? `No current memories${filter}.`
      : 'I have no memories of our conversations yet. I learn while I sleep: talk to me, and after a quiet while (or /sleep) what I learned shows up here.';
  } else {
    const lines = rows.map((row, i) => {
      const date = formatLocalMinute(dates.get(row.id) ?? row.validFrom, scope.timeZone).slice(0, 10);
      return `${entries[i]!.n}. ${excerpt(row.content, MAX_LINE_CHARS)}\n    ${row.category} · confidence ${row.confidence.toFixed(2)} · from ${date}`;
    });
    const first = entries[0]!.n;
    const last = entries[entries.length - 1]!.n;
    text = [`Memories${filter} ${first}–${last} of ${total} (page ${shown + 1}/${pages})`, '', ...lines, '', 'Reply /forget N to make me forget one, /why N to see where it came from.'].join('\n');
  }
  return { text, page: shown, pages, category, categories: categoryRows.map((r) => r.category), entries };
}
