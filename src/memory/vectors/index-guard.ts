/**
 * Keeps one vector space per index. The index records which embedder made its vectors; when the
 * configured embedder is a different one, vector search and vector writes are refused (never a
 * silent mix of spaces) until `npm run cli -- reindex` rebuilds the index.
 */
import { AppError } from '../../shared/errors';
import type { PrismaClient } from '../../storage/prisma';
import type { Embedder } from '../embeddings/embedder';
import type { IndexIdentity, VectorIndex } from './vector-index';

export type IndexState =
  | { readonly status: 'ready'; readonly identity: IndexIdentity }
  | { readonly status: 'mismatch'; readonly stored: IndexIdentity; readonly configured: IndexIdentity }
  /** The index could not be opened (a Qdrant server down, a locked file): retried by `ensure()`. */
  | { readonly status: 'unavailable'; readonly reason: string; readonly configured: IndexIdentity };

export interface IndexGuard {
  /**
   * Opens the index; records the identity on first use; detects a lost index and re-queues its
   * rows. An index that cannot be opened is `unavailable` (never an exception): the service runs
   * on keyword search, ingest goes on, and vectors are backfilled once `ensure()` reaches it.
   */
  init(): Promise<IndexState>;
  /** Retries opening an unavailable index (at most every `retryMs`); returns the state. */
  ensure(): Promise<IndexState>;
  state(): IndexState;
  /** Throws `vectors.embedder_changed` or `vectors.unavailable` unless the index is ready. */
  assertReady(): void;
  /** Empties the index and records the configured identity; every row is then re-embedded. */
  reset(): Promise<void>;
}

export function embedderChangedError(stored: IndexIdentity, configured: IndexIdentity): AppError {
  return new AppError(
    `The vector index holds vectors of ${stored.embedder} (${stored.dimension}-d), but the configured embedder is ${configured.embedder} (${configured.dimension}-d); vector search is off until the index is rebuilt with \`npm run cli -- reindex\`.`,
    { code: 'vectors.embedder_changed', category: 'user', hint: 'Run `npm run cli -- reindex` (resumable), or set EMBEDDER back.' },
  );
}

export function indexUnavailableError(reason: string): AppError {
  return new AppError(`The vector index is unavailable (${reason}); searching by keywords only, and vectors will be written when it answers again.`, {
    code: 'vectors.unavailable',
    category: 'third_party',
    hint: 'Check VECTOR_STORE and QDRANT_URL (or the vectors.db file), then `npm run cli -- doctor`.',
  });
}

export function createIndexGuard(deps: { index: VectorIndex; embedder: Embedder; prisma: PrismaClient; retryMs?: number; clock?: () => number }): IndexGuard {
  const configured: IndexIdentity = { embedder: deps.embedder.name, dimension: deps.embedder.dimension };
  const retryMs = deps.retryMs ?? 30_000;
  const clock = deps.clock ?? Date.now;
  let current: IndexState | undefined;
  let lastAttempt = 0;

  /** Rows marked as embedded by the configured embedder whose vectors are not in a new index. */
  async function requeueAll(): Promise<void> {
    await deps.prisma.episode.updateMany({ where: { embeddedWith: { not: null } }, data: { embeddedWith: null } });
    await deps.prisma.memory.updateMany({ where: { embeddedWith: { not: null } }, data: { embeddedWith: null } });
  }

  return {
    async init() {
      lastAttempt = clock();
      let stored: IndexIdentity | null;
      try {
        stored = await deps.index.init();
      } catch (error) {
        current = { status: 'unavailable', reason: error instanceof Error ? error.message : String(error), configured };
        return current;
      }
      if (!stored) {
        // A new (or lost) index: whatever rows claim to be embedded must be embedded again.
        await deps.index.setIdentity(configured);
        await requeueAll();
        current = { status: 'ready', identity: configured };
      } else if (stored.embedder === configured.embedder && stored.dimension === configured.dimension) {
        current = { status: 'ready', identity: stored };
      } else {
        current = { status: 'mismatch', stored, configured };
      }
      return current;
    },
    async ensure() {
      if (current?.status === 'unavailable' && clock() - lastAttempt >= retryMs) return this.init();
      return this.state();
    },
    state() {
      if (!current) throw new Error('index guard used before init()');
      return current;
    },
    assertReady() {
      const state = this.state();
      if (state.status === 'mismatch') throw embedderChangedError(state.stored, state.configured);
      if (state.status === 'unavailable') throw indexUnavailableError(state.reason);
    },
    async reset() {
      await deps.index.clear();
      await deps.index.setIdentity(configured);
      current = { status: 'ready', identity: configured };
    },
  };
}
