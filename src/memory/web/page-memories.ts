/**
 * What the memory page lists and opens: the scope's memories (current ones; faded ones on demand)
 * with the messages each came from, a search with the hybrid search the agent uses, and one
 * memory with its earlier versions and its links.
 *
 * A reach names the scope and, for a member of a group who is not its administrator, the member
 * (memories/speakers.ts): every query filters by both, so another scope's memory, or another
 * member's, is simply not found. Every text returned passes the output filter.
 */
import type { PrismaClient } from '../../storage/prisma';
import { chainOf } from '../forget/memory-chain';
import type { MemoryCatalog } from '../memories/memory-catalog';
import { KNOWLEDGE_ONLY } from '../memories/categories';
import { aboutSpeaker } from '../memories/speakers';
import { showStoredValue } from '../output-filter';
import type { HybridSearch } from '../retrieval/hybrid-search';

/** Whose memories a page request reaches: a scope, or one member's within a group. */
export interface PageReach {
  readonly scopeId: string;
  readonly speakerId?: string;
}

/** A source message of a memory, as the page shows it. */
export interface PageSource {
  readonly id: string;
  readonly at: string;
  readonly text: string;
}

/** One memory on the page. */
export interface PageMemory {
  readonly id: string;
  readonly content: string;
  readonly category: string;
  readonly confidence: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** It never fades (the person pinned it). */
  readonly pinned: boolean;
  /** It has faded: kept for deep recall, no longer believed strongly. */
  readonly faded: boolean;
  readonly sources: readonly PageSource[];
}

/** One memory opened: its earlier versions (oldest first) and the memories it is linked with. */
export interface PageMemoryDetail extends PageMemory {
  readonly history: ReadonlyArray<{ id: string; content: string; confidence: number; validFrom: string; validTo: string | null }>;
  readonly links: ReadonlyArray<{ id: string; kind: string; content: string }>;
}

/** Most memories one list answers (a person's whole memory is far below it). */
export const MAX_PAGE_MEMORIES = 1_000;
/** Most source messages shown per memory (the oldest; `/why` says how many there are). */
export const MAX_SOURCES_SHOWN = 5;
/** Most results of a search on the page. */
const SEARCH_LIMIT = 50;

export interface PageMemories {
  list(reach: PageReach, query: { q?: string; category?: string; all: boolean }): Promise<PageMemory[]>;
  /** One memory of the reach, or null (not in the scope, another member's, or gone). */
  detail(reach: PageReach, memoryId: string): Promise<PageMemoryDetail | null>;
}

type MemoryRow = {
  id: string;
  content: string;
  category: string;
  confidence: number;
  createdAt: Date;
  updatedAt: Date;
  active: boolean;
  pinned: boolean;
};

export function createPageMemories(deps: { prisma: PrismaClient; search: Pick<HybridSearch, 'search'>; catalog: Pick<MemoryCatalog, 'detail'> }): PageMemories {
  const { prisma } = deps;
  const reachFilter = (reach: PageReach) => ({ scopeId: reach.scopeId, ...(reach.speakerId === undefined ? {} : { AND: [aboutSpeaker(reach.speakerId)] }) });

  async function sourcesOf(scopeId: string, ids: readonly string[]): Promise<Map<string, PageSource[]>> {
    const rows = await prisma.memorySource.findMany({
      where: { scopeId, memoryId: { in: [...ids] } },
      select: { memoryId: true, episode: { select: { id: true, timestamp: true, content: true } } },
      orderBy: { episode: { timestamp: 'asc' } },
    });
    const out = new Map<string, PageSource[]>();
    for (const r of rows) {
      const list = out.get(r.memoryId) ?? [];
      if (list.length < MAX_SOURCES_SHOWN) list.push({ id: r.episode.id, at: r.episode.timestamp.toISOString(), text: r.episode.content });
      out.set(r.memoryId, list);
    }
    return out;
  }

  async function shown(scopeId: string, rows: readonly MemoryRow[]): Promise<PageMemory[]> {
    const sources = await sourcesOf(
      scopeId,
      rows.map((r) => r.id),
    );
    return rows.map((r) =>
      showStoredValue({
        id: r.id,
        content: r.content,
        category: r.category,
        confidence: r.confidence,
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
        pinned: r.pinned,
        faded: !r.active,
        sources: sources.get(r.id) ?? [],
      }),
    );
  }

  return {
    async list(reach, query) {
      const state = query.all ? { validTo: null } : { active: true, validTo: null };
      const where = { ...reachFilter(reach), ...state, ...(query.category ? { category: query.category } : KNOWLEDGE_ONLY) };
      const q = query.q?.trim();
      if (!q) {
        const rows = await prisma.memory.findMany({
          where,
          orderBy: [{ active: 'desc' }, { confidence: 'desc' }, { validFrom: 'asc' }, { id: 'asc' }],
          take: MAX_PAGE_MEMORIES,
        });
        return shown(reach.scopeId, rows);
      }
      const { results } = await deps.search.search({
        scopeId: reach.scopeId,
        semanticQuery: q,
        kinds: ['memory'],
        limit: SEARCH_LIMIT,
        includeInactive: query.all,
      });
      const order = results.filter((r) => r.kind === 'memory').map((r) => r.id);
      const rows = await prisma.memory.findMany({ where: { ...where, id: { in: order } } });
      const byId = new Map(rows.map((r) => [r.id, r]));
      return shown(
        reach.scopeId,
        order.flatMap((id) => byId.get(id) ?? []),
      );
    },

    async detail(reach, memoryId) {
      const row = await prisma.memory.findFirst({ where: { ...reachFilter(reach), id: memoryId } });
      if (!row) return null;
      const detail = await deps.catalog.detail(reach.scopeId, memoryId);
      if (!detail) return null;
      const [base] = await shown(reach.scopeId, [row]);
      const chain = await chainOf(prisma, reach.scopeId, memoryId);
      const earlier = await prisma.memory.findMany({
        where: { scopeId: reach.scopeId, id: { in: chain.filter((m) => m.id !== memoryId && m.state === 'superseded').map((m) => m.id) } },
        orderBy: { validFrom: 'asc' },
        select: { id: true, content: true, confidence: true, validFrom: true, validTo: true },
      });
      const linkedIds = [...detail.memory.linksFrom.map((l) => [l.toId, l.kind] as const), ...detail.memory.linksTo.map((l) => [l.fromId, l.kind] as const)];
      const linked = await prisma.memory.findMany({
        where: { ...reachFilter(reach), id: { in: linkedIds.map(([id]) => id) } },
        select: { id: true, content: true },
      });
      const contentOf = new Map(linked.map((m) => [m.id, m.content]));
      return showStoredValue({
        ...base!,
        history: earlier.map((m) => ({
          id: m.id,
          content: m.content,
          confidence: m.confidence,
          validFrom: m.validFrom.toISOString(),
          validTo: m.validTo?.toISOString() ?? null,
        })),
        links: linkedIds.flatMap(([id, kind]) => (contentOf.has(id) ? [{ id, kind, content: contentOf.get(id)! }] : [])),
      });
    },
  };
}
