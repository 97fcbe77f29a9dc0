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
  | { readonly status: 'mismatch'; readonly stored: IndexIdentity; readonly configured: IndexIdentity };

export interface IndexGuard {
  /** Opens the index; records the identity on first use; detects a lost index and re-queues its rows. */
  init(): Promise<IndexState>;
  state(): IndexState;
  /** Throws `vectors.embedder_changed` unless the index holds the configured embedder's vectors. */
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

export function createIndexGuard(deps: { index: VectorIndex; embedder: Embedder; prisma: PrismaClient }): IndexGuard {
  const configured: IndexIdentity = { embedder: deps.embedder.name, dimension: deps.embedder.dimension };
  let current: IndexState | undefined;

  /** Rows marked as embedded by the configured embedder whose vectors are not in a new index. */
  async function requeueAll(): Promise<void> {
    await deps.prisma.episode.updateMany({ where: { embeddedWith: { not: null } }, data: { embeddedWith: null } });
    await deps.prisma.memory.updateMany({ where: { embeddedWith: { not: null } }, data: { embeddedWith: null } });
  }

  return {
    async init() {
      const stored = await deps.index.init();
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
    state() {
      if (!current) throw new Error('index guard used before init()');
      return current;
    },
    assertReady() {
      const state = this.state();
      if (state.status === 'mismatch') throw embedderChangedError(state.stored, state.configured);
    },
    async reset() {
      await deps.index.clear();
      await deps.index.setIdentity(configured);
      current = { status: 'ready', identity: configured };
    },
  };
}
