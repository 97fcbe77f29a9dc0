/**
 * A scored candidate as the search reports it: its row's fields for its kind, its score and parts
 * to four decimals, a memory's sources and whether it has faded.
 */
import type { ScoreParts, SearchResult } from './memory-query';
import { isFaded } from './search-filters';
import { round, type Scored } from './search-scoring';

/** The result of one scored episode or memory. */
export function toResult(s: Scored): SearchResult {
  const parts = Object.fromEntries(Object.entries(s.parts).map(([k, v]) => [k, round(v as number)])) as ScoreParts;
  if (s.episode) {
    const e = s.episode;
    return {
      kind: 'episode',
      id: e.id,
      externalId: e.externalId,
      content: e.content,
      timestamp: e.timestamp,
      score: round(s.base),
      parts,
      conversationId: e.conversationId,
      role: e.role,
      author: e.author,
    };
  }
  const m = s.memory!;
  return {
    kind: 'memory',
    id: m.id,
    externalId: null,
    content: m.content,
    timestamp: m.validFrom,
    score: round(s.base),
    parts,
    category: m.category,
    confidence: m.confidence,
    ...(isFaded(m) && { faded: true }),
    sourceEpisodes: m.sources.map((src) => ({ id: src.episodeId, externalId: src.episode.externalId })),
  };
}
