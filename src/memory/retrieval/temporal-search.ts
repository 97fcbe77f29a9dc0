/**
 * The temporal strategy of search: no query text, the scope's newest episodes and memories (in the
 * query's time range and filters), each scored by its recency alone.
 */
import type { MemoryRepository } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { MemoryQuery, ResultKind } from './memory-query';
import { recalledOnly } from './memory-search';
import { episodePasses, memoryPasses, topicFilter } from './search-filters';
import { recencyOf, type Scored } from './search-scoring';

/**
 * The newest items of the asked kinds, newest first by kind; up to four times `limit` of each are
 * read, so filters that drop some still leave enough.
 */
export async function temporalItems(
  deps: { prisma: PrismaClient; memories: MemoryRepository },
  query: MemoryQuery,
  now: Date,
  kinds: readonly ResultKind[],
  limit: number,
): Promise<Scored[]> {
  const out: Scored[] = [];
  const range = { gte: query.timeRange?.start, lte: query.timeRange?.end };
  if (kinds.includes('episode')) {
    const rows = await deps.prisma.episode.findMany({
      where: {
        scopeId: query.scopeId,
        timestamp: range,
        channel: query.channel,
        importance: query.minImportance === undefined ? undefined : { gte: query.minImportance },
      },
      orderBy: [{ timestamp: 'desc' }, { id: 'desc' }],
      take: limit * 4,
    });
    const tagged = await topicFilter(
      deps.prisma,
      query,
      rows.map((r) => r.id),
    );
    for (const e of rows)
      if (episodePasses(query, e, tagged))
        out.push({ kind: 'episode', id: e.id, base: recencyOf(e.timestamp, now), parts: { recency: recencyOf(e.timestamp, now) }, episode: e });
  }
  if (kinds.includes('memory')) {
    const ids = await deps.prisma.memory.findMany({
      where: { scopeId: query.scopeId, validFrom: range },
      orderBy: { validFrom: 'desc' },
      take: limit * 4,
      select: { id: true },
    });
    for (const m of await deps.memories.getMany(
      query.scopeId,
      ids.map((r) => r.id),
    )) {
      if (memoryPasses(query, m) && !recalledOnly(query, m))
        out.push({ kind: 'memory', id: m.id, base: recencyOf(m.validFrom, now), parts: { recency: recencyOf(m.validFrom, now) }, memory: m });
    }
  }
  return out;
}
