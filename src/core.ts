/**
 * The storage-backed services every entry point needs (the service in main.ts, each CLI
 * command): open the database, build the repositories and the episode service. Channels, the
 * scheduler and the HTTP server are added by main.ts on top of this.
 */
import type { Config } from './config/load-config';
import { createEpisodeService, type EpisodeService } from './memory/episodes/episode-service';
import type { Logger } from './shared/logger';
import { openDatabase, type Database } from './storage/database';
import { createEpisodeRepository, type EpisodeRepository } from './storage/episode-repository';
import { createFullTextIndex, type FullTextIndex } from './storage/full-text';
import { createScopeRepository, type ScopeRepository } from './storage/scope-repository';

export interface Core {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Database;
  readonly scopes: ScopeRepository;
  readonly episodes: EpisodeRepository;
  readonly fullText: FullTextIndex;
  readonly episodeService: EpisodeService;
  close(): Promise<void>;
}

export async function createCore(config: Config, logger: Logger): Promise<Core> {
  const db = await openDatabase({ database: config.database, logger: logger.child({ component: 'storage' }) });
  const scopes = createScopeRepository(db.prisma);
  const episodes = createEpisodeRepository(db.prisma);
  return {
    config,
    logger,
    db,
    scopes,
    episodes,
    fullText: createFullTextIndex(db.prisma, db.provider),
    episodeService: createEpisodeService({ scopes, episodes, logger, maxEpisodeBytes: config.ingest.maxEpisodeBytes }),
    close: () => db.close(),
  };
}
