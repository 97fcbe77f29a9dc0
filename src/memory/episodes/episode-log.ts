/**
 * The read side of episodes for the layers above the domain: a scope's messages as they may be
 * shown (CLI `episodes`, the admin API), every text through the output filter. Writing goes
 * through the episode service (normalization, size, idempotence).
 */
import type { Episode } from '../../storage/prisma';
import type { EpisodeRepository, ListEpisodesQuery } from '../../storage/episode-repository';
import { showStoredValue } from '../output-filter';

export interface EpisodeLog {
  /** Episodes of a scope, oldest first: the latest `limit`, or those since a time. */
  list(scopeId: string, query?: ListEpisodesQuery): Promise<Episode[]>;
  get(scopeId: string, id: string): Promise<Episode | null>;
}

export function createEpisodeLog(episodes: EpisodeRepository): EpisodeLog {
  return {
    list: async (scopeId, query) => (await episodes.list(scopeId, query)).map(showStoredValue),
    get: async (scopeId, id) => {
      const row = await episodes.get(scopeId, id);
      return row && showStoredValue(row);
    },
  };
}
