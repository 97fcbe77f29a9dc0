/**
 * The storage-backed services every entry point needs (the service in main.ts, each CLI
 * command): the database, the repositories, the episode service, and the retrieval stack
 * (embedder, vector index and its guard, the embedding worker, hybrid search). Channels, the
 * scheduler and the HTTP server are added by main.ts on top of this.
 */
import type { Config } from './config/load-config';
import { createEmbedder } from './memory/embeddings/create-embedder';
import type { Embedder } from './memory/embeddings/embedder';
import { createEmbeddingWorker, type EmbeddingWorker } from './memory/embeddings/embedding-worker';
import { createEpisodeService, type EpisodeService } from './memory/episodes/episode-service';
import { createHybridSearch, type HybridSearch } from './memory/retrieval/hybrid-search';
import { createVectorIndex } from './memory/vectors/create-vector-index';
import { createIndexGuard, type IndexGuard } from './memory/vectors/index-guard';
import type { VectorIndex } from './memory/vectors/vector-index';
import type { Logger } from './shared/logger';
import { openDatabase, type Database } from './storage/database';
import { createEpisodeRepository, type EpisodeRepository } from './storage/episode-repository';
import { createFullTextIndex, type FullTextIndex } from './storage/full-text';
import { createMemoryRepository, type MemoryRepository } from './storage/memory-repository';
import { createScopeRepository, type ScopeRepository } from './storage/scope-repository';

export interface Core {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Database;
  readonly scopes: ScopeRepository;
  readonly episodes: EpisodeRepository;
  readonly memories: MemoryRepository;
  readonly fullText: FullTextIndex;
  readonly episodeService: EpisodeService;
  readonly embedder: Embedder;
  readonly vectorIndex: VectorIndex;
  readonly indexGuard: IndexGuard;
  readonly embeddingWorker: EmbeddingWorker;
  readonly search: HybridSearch;
  close(): Promise<void>;
}

/** Replacements for tests and evaluations (a deterministic embedder, an in-memory index). */
export interface CoreOverrides {
  readonly embedder?: Embedder;
  readonly vectorIndex?: VectorIndex;
}

export async function createCore(config: Config, logger: Logger, overrides: CoreOverrides = {}): Promise<Core> {
  const db = await openDatabase({ database: config.database, logger: logger.child({ component: 'storage' }) });
  const scopes = createScopeRepository(db.prisma);
  const episodes = createEpisodeRepository(db.prisma);
  const memories = createMemoryRepository(db.prisma);
  const fullText = createFullTextIndex(db.prisma, db.provider);
  const embedder = overrides.embedder ?? createEmbedder(config.embedder, { logger: logger.child({ component: 'embedder' }), timeoutMs: config.llm.timeoutMs });
  const vectorIndex = overrides.vectorIndex ?? createVectorIndex(config.vectors, embedder.dimension);
  const indexGuard = createIndexGuard({ index: vectorIndex, embedder, prisma: db.prisma });
  try {
    const state = await indexGuard.init();
    if (state.status === 'mismatch') {
      logger.warn('vector search is off until the index is rebuilt: run `npm run cli -- reindex`', { stored: state.stored, configured: state.configured });
    }
  } catch (error) {
    await db.close();
    throw error;
  }
  const embeddingWorker = createEmbeddingWorker({ prisma: db.prisma, embedder, index: vectorIndex, guard: indexGuard, logger });
  const episodeService = createEpisodeService({ scopes, episodes, logger, maxEpisodeBytes: config.ingest.maxEpisodeBytes });
  const search = createHybridSearch({ prisma: db.prisma, episodes, memories, fullText, embedder, index: vectorIndex, guard: indexGuard, logger, contextRadius: 2 });
  return {
    config,
    logger,
    db,
    scopes,
    episodes,
    memories,
    fullText,
    episodeService,
    embedder,
    vectorIndex,
    indexGuard,
    embeddingWorker,
    search,
    async close() {
      await embeddingWorker.stop();
      await embedder.close();
      await vectorIndex.close();
      await db.close();
    },
  };
}
