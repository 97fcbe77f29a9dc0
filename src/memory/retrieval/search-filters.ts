/**
 * The filters of a memory query (channel, importance, time range, topics and entities,
 * confidence, source trust, inactive memories), applied to every candidate whichever path found it:
 * vector, keyword, neighbouring turn or the temporal listing.
 *
 * Why one place: a filter checked on one path and forgotten on another would let an item the
 * caller excluded come back through a neighbour.
 */
import type { EpisodeSearchRow } from '../../storage/episode-repository';
import type { MemoryWithSources } from '../../storage/memory-repository';
import type { PrismaClient } from '../../storage/prisma';
import type { MemoryQuery } from './memory-query';

/**
 * The ids among `ids` tagged with one of the query's topics or entities, or undefined when the
 * query names none (no filter).
 */
export async function topicFilter(prisma: PrismaClient, query: MemoryQuery, ids: readonly string[]): Promise<Set<string> | undefined> {
  const tags = [
    ...(query.topics ?? []).map((v) => ({ kind: 'topic', value: v.toLowerCase().trim() })),
    ...(query.entities ?? []).map((v) => ({ kind: 'entity', value: v.toLowerCase().trim() })),
  ];
  if (tags.length === 0) return undefined;
  const rows = await prisma.episodeTag.findMany({
    where: { scopeId: query.scopeId, episodeId: { in: [...ids] }, OR: tags },
    select: { episodeId: true },
  });
  return new Set(rows.map((r) => r.episodeId));
}

/** Whether an episode passes the query's filters (`tagged`: from {@link topicFilter}). */
export function episodePasses(query: MemoryQuery, e: EpisodeSearchRow, tagged: Set<string> | undefined): boolean {
  if (query.channel && e.channel !== query.channel) return false;
  if (query.minImportance !== undefined && e.importance < query.minImportance) return false;
  if (query.timeRange?.start && e.timestamp < query.timeRange.start) return false;
  if (query.timeRange?.end && e.timestamp > query.timeRange.end) return false;
  if (tagged && !tagged.has(e.id)) return false;
  return true;
}

/** Whether a memory has faded: deactivated by decay or expiry, but never superseded. */
export function isFaded(m: { active: boolean; validTo: Date | null }): boolean {
  return !m.active && m.validTo === null;
}

/**
 * Whether a memory passes the query's filters. A faded memory asked for by deep recall
 * (`includeFaded`) is exempt from the confidence floor: fading is what lowered it.
 */
export function memoryPasses(query: MemoryQuery, m: MemoryWithSources): boolean {
  const recalled = query.includeFaded === true && isFaded(m);
  if (!query.includeInactive && !m.active && !recalled) return false;
  if (query.minConfidence !== undefined && m.confidence < query.minConfidence && !recalled) return false;
  if (query.minSourceTrust !== undefined && m.sourceTrust < query.minSourceTrust) return false;
  if (query.minImportance !== undefined && m.importance < query.minImportance) return false;
  if (query.timeRange?.start && m.validFrom < query.timeRange.start) return false;
  if (query.timeRange?.end && m.validFrom > query.timeRange.end) return false;
  return true;
}
