/**
 * The retrieval half of the core (core.ts): the embedder and the vector index (or the test's
 * doubles), the guard that turns vector search off while the index does not match the embedder,
 * the embedding worker that fills it, and the hybrid search every caller gets through the output
 * filter, its latency recorded in the core's metrics.
 */
import type { Config } from './config/load-config';
import type { Embedder } from './memory/embeddings/embedder';
import { createEmbeddingWorker, type EmbeddingWorker } from './memory/embeddings/embedding-worker';
import { showSearchResults } from './memory/output-filter';
import { createHybridSearch, type HybridSearch } from './memory/retrieval/hybrid-search';
import { createIndexGuard, type IndexGuard } from './memory/vectors/index-guard';
import type { VectorIndex } from './memory/vectors/vector-index';
import type { Logger } from './shared/logger';
import { createMetrics, type Metrics } from './shared/metrics';
import type { Database } from './storage/database';
import type { EpisodeRepository } from './storage/episode-repository';
import type { FullTextIndex } from './storage/full-text';
import type { MemoryRepository } from './storage/memory-repository';
import { createEmbedder } from './vectors/embedders/create-embedder';
import { createVectorIndex } from './vectors/indexes/create-vector-index';

/** The retrieval services the core holds. */
export interface Retrieval {
  readonly embedder: Embedder;
  readonly vectorIndex: VectorIndex;
  readonly indexGuard: IndexGuard;
  readonly metrics: Metrics;
  readonly embeddingWorker: EmbeddingWorker;
  readonly search: HybridSearch;
}

/** Builds the retrieval stack on an open store; warns (once, at start) when vector search is off. */
export async function createRetrieval(
  config: Config,
  logger: Logger,
  overrides: { readonly embedder?: Embedder; readonly vectorIndex?: VectorIndex },
  store: { db: Database; episodes: EpisodeRepository; memories: MemoryRepository; fullText: FullTextIndex },
): Promise<Retrieval> {
  const { db, episodes, memories, fullText } = store;
  const embedder = overrides.embedder ?? createEmbedder(config.embedder, { logger: logger.child({ component: 'embedder' }), timeoutMs: config.llm.timeoutMs });
  const vectorIndex = overrides.vectorIndex ?? createVectorIndex(config.vectors, embedder.dimension);
  const indexGuard = createIndexGuard({ index: vectorIndex, embedder, prisma: db.prisma });
  const state = await indexGuard.init();
  if (state.status === 'mismatch') {
    logger.warn('vector search is off until the index is rebuilt: run `npm run cli -- reindex`', { stored: state.stored, configured: state.configured });
  } else if (state.status === 'unavailable') {
    logger.warn('the vector index is unavailable: searching by keywords only; episodes are stored and get their vectors when it answers', {
      reason: state.reason,
    });
  }
  const metrics = createMetrics({
    nocturne_search_seconds: 'Hybrid search latency, query embedding included.',
    nocturne_embedding_set_aside_total: 'Episodes and memories the embedder kept refusing, set aside so the queue goes on (`doctor` lists them).',
  });
  const embeddingWorker = createEmbeddingWorker({ prisma: db.prisma, embedder, index: vectorIndex, guard: indexGuard, logger, metrics });
  const hybrid = createHybridSearch({
    prisma: db.prisma,
    episodes,
    memories,
    fullText,
    embedder,
    index: vectorIndex,
    guard: indexGuard,
    logger,
    contextRadius: 2,
  });
  // The domain boundary of search: every caller (agent prompt, memory tools, CLI, admin API,
  // sleep) gets the results' texts through the output filter, never a stored secret.
  const search: HybridSearch = {
    async search(query) {
      const started = performance.now();
      try {
        const outcome = await hybrid.search(query);
        return { ...outcome, results: showSearchResults(outcome.results) };
      } finally {
        metrics.observe('nocturne_search_seconds', (performance.now() - started) / 1000, { strategy: query.strategy ?? 'hybrid' });
      }
    },
  };
  return { embedder, vectorIndex, indexGuard, metrics, embeddingWorker, search };
}
