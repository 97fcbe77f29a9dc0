/**
 * The read side of consolidated memory: what a person, an operator or a command may see of it.
 * Pages of current memories (with the time of the first message each came from), the categories,
 * filtered listings for the admin API and the CLI, one memory with its sources, links and
 * history, and the messages a memory was learned from (`/why`).
 *
 * Every call names the scope and every query filters by it, and every text returned passes the
 * output filter ({@link showStoredValue}), so no caller can forget either.
 */
import type { AuditEvent, Memory, MemoryLink, PrismaClient } from '../../storage/prisma';
import { showStoredValue } from '../output-filter';
import { KNOWLEDGE_ONLY } from './categories';
import { aboutSpeaker, isAboutSpeaker } from './speakers';

/** current: what is believed now; all: faded and superseded versions too. */
export type MemoryState = 'current' | 'all';

export interface MemoryListQuery {
  readonly state?: MemoryState;
  readonly category?: string | null;
  readonly minConfidence?: number;
  readonly offset?: number;
  readonly limit?: number;
}

/** One line of a `/memories` page. */
export interface MemoryLine {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  readonly validFrom: Date;
  /** When the first message it was learned from was said (null: no sources, e.g. imported). */
  readonly firstHeardAt: Date | null;
  /** It has faded (deactivated, kept for deep recall); only pages asked `withFaded` hold one. */
  readonly faded: boolean;
  /** The person pinned it (memory-corrections.ts): it never fades by itself. */
  readonly pinned: boolean;
}

/** One source message of a memory, as `/why` shows it. */
export interface MemorySourceMessage {
  readonly timestamp: Date;
  readonly author: string | null;
  readonly role: string;
  readonly content: string;
}

export interface MemoryExplanation {
  readonly content: string;
  readonly sourceType: string;
  readonly validFrom: Date;
  /** How many messages it was learned from (more than `sources` holds when capped). */
  readonly sourceCount: number;
  /** The oldest source messages first. */
  readonly sources: readonly MemorySourceMessage[];
  /** The versions it replaced (a correction, a revision), the oldest first: what it said before. */
  readonly earlier: ReadonlyArray<{ readonly content: string; readonly validFrom: Date; readonly validTo: Date | null }>;
}

export interface MemoryDetail {
  readonly memory: Memory & {
    sources: Array<{ episode: { id: string; externalId: string | null; content: string; timestamp: Date; role: string } }>;
    linksFrom: MemoryLink[];
    linksTo: MemoryLink[];
  };
  readonly history: AuditEvent[];
}

export interface MemoryCatalog {
  /**
   * Current memories, most confident first, `limit` from `offset`, with how many there are.
   * Without a category: what is known about the person (conversation summaries only when asked for).
   * `withFaded`: the faded memories follow the current ones (so a number means the same current
   * memory either way), most confident first.
   * `speakerId`: only what a member of a group reaches, the memories about them (speakers.ts).
   */
  page(
    scopeId: string,
    query: { category: string | null; offset: number; limit: number; withFaded?: boolean; speakerId?: string },
  ): Promise<{ total: number; lines: MemoryLine[] }>;
  /** Every category of the scope's current memories (about `speakerId` when given), alphabetically. */
  categories(scopeId: string, speakerId?: string): Promise<string[]>;
  /** Whether a memory of the scope is about a group's member (theirs to forget); false when gone. */
  isAbout(scopeId: string, memoryId: string, speakerId: string): Promise<boolean>;
  /** Memories of a state, most confident first (admin API, CLI). */
  list(scopeId: string, query?: MemoryListQuery): Promise<{ total: number; memories: Memory[] }>;
  /** One memory with its sources, links and audit history; null when not in this scope. */
  detail(scopeId: string, memoryId: string): Promise<MemoryDetail | null>;
  /** What a memory says and the messages it came from (at most `maxSources`); null when gone. */
  explain(scopeId: string, memoryId: string, maxSources: number): Promise<MemoryExplanation | null>;
}

/** Earlier versions `/why` shows at most: the recent history of a memory, not every rewording it ever had. */
const MAX_EARLIER_VERSIONS = 10;

function stateFilter(state: MemoryState | undefined): { active?: boolean; validTo?: null } {
  return state === 'all' ? {} : { active: true, validTo: null };
}

export function createMemoryCatalog(prisma: PrismaClient): MemoryCatalog {
  async function firstHeard(scopeId: string, memoryIds: readonly string[]): Promise<Map<string, Date>> {
    const sources = await prisma.memorySource.findMany({
      where: { scopeId, memoryId: { in: [...memoryIds] } },
      select: { memoryId: true, episode: { select: { timestamp: true } } },
    });
    const dates = new Map<string, Date>();
    for (const s of sources) {
      const known = dates.get(s.memoryId);
      if (!known || s.episode.timestamp < known) dates.set(s.memoryId, s.episode.timestamp);
    }
    return dates;
  }

  /** The chain of versions `memoryId` replaced, walked back through `supersededById`, oldest first. */
  async function earlierVersions(scopeId: string, memoryId: string): Promise<MemoryExplanation['earlier']> {
    const chain: Array<MemoryExplanation['earlier'][number]> = [];
    const seen = new Set([memoryId]);
    let next = [memoryId];
    while (next.length > 0 && chain.length < MAX_EARLIER_VERSIONS) {
      const rows = await prisma.memory.findMany({
        where: { scopeId, supersededById: { in: next } },
        select: { id: true, content: true, validFrom: true, validTo: true },
        orderBy: { validFrom: 'desc' },
      });
      const fresh = rows.filter((r) => !seen.has(r.id));
      for (const r of fresh) seen.add(r.id);
      chain.push(...fresh.map(({ content, validFrom, validTo }) => ({ content, validFrom, validTo })));
      next = fresh.map((r) => r.id);
    }
    return chain.slice(0, MAX_EARLIER_VERSIONS).sort((a, b) => a.validFrom.getTime() - b.validFrom.getTime());
  }

  return {
    async page(scopeId, query) {
      const state = query.withFaded ? { validTo: null } : stateFilter('current');
      const where = {
        scopeId,
        ...state,
        ...(query.category ? { category: query.category } : KNOWLEDGE_ONLY),
        ...(query.speakerId === undefined ? {} : { AND: [aboutSpeaker(query.speakerId)] }),
      };
      const [total, rows] = await Promise.all([
        prisma.memory.count({ where }),
        prisma.memory.findMany({
          where,
          orderBy: [{ active: 'desc' }, { confidence: 'desc' }, { validFrom: 'asc' }, { id: 'asc' }],
          skip: query.offset,
          take: query.limit,
          select: { id: true, category: true, content: true, confidence: true, validFrom: true, active: true, pinned: true },
        }),
      ]);
      const dates = await firstHeard(
        scopeId,
        rows.map((r) => r.id),
      );
      return {
        total,
        lines: rows.map(({ active, ...r }) => showStoredValue({ ...r, firstHeardAt: dates.get(r.id) ?? null, faded: !active })),
      };
    },

    isAbout: (scopeId, memoryId, speakerId) => isAboutSpeaker(prisma, scopeId, memoryId, speakerId),

    async categories(scopeId, speakerId) {
      const rows = await prisma.memory.findMany({
        where: { scopeId, ...stateFilter('current'), ...(speakerId === undefined ? {} : aboutSpeaker(speakerId)) },
        distinct: ['category'],
        select: { category: true },
        orderBy: { category: 'asc' },
      });
      return rows.map((r) => r.category);
    },

    async list(scopeId, query = {}) {
      const where = {
        scopeId,
        ...stateFilter(query.state),
        ...(query.category ? { category: query.category } : {}),
        ...(query.minConfidence === undefined ? {} : { confidence: { gte: query.minConfidence } }),
      };
      const [total, memories] = await Promise.all([
        prisma.memory.count({ where }),
        prisma.memory.findMany({ where, orderBy: [{ confidence: 'desc' }, { id: 'asc' }], skip: query.offset, take: query.limit }),
      ]);
      return { total, memories: memories.map(showStoredValue) };
    },

    async detail(scopeId, memoryId) {
      const memory = await prisma.memory.findFirst({
        where: { scopeId, id: memoryId },
        include: {
          sources: { include: { episode: { select: { id: true, externalId: true, content: true, timestamp: true, role: true } } } },
          linksFrom: true,
          linksTo: true,
        },
      });
      if (!memory) return null;
      const history = await prisma.auditEvent.findMany({ where: { scopeId, subjectType: 'memory', subjectId: memoryId }, orderBy: { createdAt: 'asc' } });
      return showStoredValue({ memory, history });
    },

    async explain(scopeId, memoryId, maxSources) {
      const memory = await prisma.memory.findFirst({ where: { scopeId, id: memoryId }, select: { content: true, sourceType: true, validFrom: true } });
      if (!memory) return null;
      const [sourceCount, rows] = await Promise.all([
        prisma.memorySource.count({ where: { scopeId, memoryId } }),
        prisma.memorySource.findMany({
          where: { scopeId, memoryId },
          select: { episode: { select: { timestamp: true, author: true, role: true, content: true } } },
          orderBy: { episode: { timestamp: 'asc' } },
          take: maxSources,
        }),
      ]);
      const earlier = await earlierVersions(scopeId, memoryId);
      return showStoredValue({ ...memory, sourceCount, sources: rows.map((r) => r.episode), earlier });
    },
  };
}
