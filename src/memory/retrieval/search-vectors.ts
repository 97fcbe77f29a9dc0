/**
 * The vector side of hybrid search: the query's embedding and the vector index's hits, each of
 * which may be missing (not configured, index unavailable or of another embedder, a failure), in
 * which case the search goes on by keywords with a note saying why.
 */
import type { Logger } from '../../shared/logger';
import { queryTerms } from '../../storage/full-text';
import type { Embedder } from '../embeddings/embedder';
import type { IndexGuard } from '../vectors/index-guard';
import type { VectorHit, VectorIndex } from '../vectors/vector-index';
import type { MemoryQuery, ResultKind } from './memory-query';

/**
 * What a query's vector is made from: its content words, as the full-text index reads them ("what
 * activities does Melanie partake in?" -> "activities melanie partake"). USE-lite embeds a
 * question's form ("what ... does ... in?") with its topic, and a question's form is shared by
 * every question but by no turn that answers it; measured on LoCoMo with the weights chosen by
 * cross-validation, the content words find more of the evidence (docs/retrieval.md).
 */
export function embeddingText(query: string): string {
  return queryTerms(query).join(' ') || query;
}

/**
 * Vector candidates whose cosine must be exact; the rest of the candidates may carry the index's
 * estimate (~0.01 off: a 0.0025 change of a score weighted 0.25), which spares the sqlite-vec
 * index ~4 ms of re-ranking per search at 100,000 vectors. The few best by meaning stay exact.
 */
const EXACT_VECTOR_TOP = 50;

/** What the vector side needs; vector search is skipped (with a note) when a part is absent. */
export interface VectorSideDeps {
  readonly embedder?: Embedder;
  readonly index?: VectorIndex;
  readonly guard?: IndexGuard;
  /** Candidates taken from the vector index. */
  readonly candidates: number;
  readonly log: Logger;
}

/** The query's embedding and the index's hits for it. */
export interface VectorSide {
  /** The query's vector, or undefined (with a note) when vector search cannot run. */
  queryVector(text: string, notes: string[]): Promise<Float32Array | undefined>;
  /** The index's best candidates of one kind for the vector (none without a vector or on failure, with a note). */
  hits(query: MemoryQuery, vector: Float32Array | undefined, kind: ResultKind, notes: string[]): Promise<VectorHit[]>;
}

/** The vector side over the given embedder, index and guard. */
export function createVectorSide(deps: VectorSideDeps): VectorSide {
  return {
    async queryVector(text, notes) {
      if (!deps.embedder || !deps.index || !deps.guard) {
        notes.push('vector search is not configured');
        return undefined;
      }
      const state = deps.guard.state();
      if (state.status === 'mismatch') {
        notes.push(
          `vector search is off: the index holds ${state.stored.embedder} vectors but the embedder is ${state.configured.embedder}; run \`npm run cli -- reindex\``,
        );
        return undefined;
      }
      if (state.status === 'unavailable') {
        notes.push('vector search is off: the vector index is unavailable; keyword search only');
        void deps.guard.ensure().catch(() => undefined);
        return undefined;
      }
      try {
        return (await deps.embedder.embed([embeddingText(text)]))[0];
      } catch (error) {
        deps.log.warn('query embedding failed; searching without vectors', { error });
        notes.push('vector search failed for this query (embedder unavailable)');
        return undefined;
      }
    },

    async hits(query, vector, kind, notes) {
      if (!vector || !deps.index) return [];
      try {
        return await deps.index.search({ scopeId: query.scopeId, vector, limit: deps.candidates, kind, exactTop: EXACT_VECTOR_TOP });
      } catch (error) {
        deps.log.warn('vector index search failed; searching without vectors', { error });
        notes.push('vector index unavailable for this query');
        return [];
      }
    },
  };
}
