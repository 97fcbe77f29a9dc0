/**
 * The VectorIndex port: stores one vector per episode or memory and finds the nearest ones,
 * always within one scope. Owned by the memory layer; adapters: `sqlite-vec-vector-index.ts`
 * (embedded default) and `qdrant-vector-index.ts`.
 *
 * Scoping is enforced inside every implementation: a search names exactly one scope and can only
 * return vectors stored under it.
 */

export type VectorKind = 'episode' | 'memory';

export interface VectorRecord {
  /** The episode or memory id (a UUID). */
  readonly id: string;
  readonly kind: VectorKind;
  readonly scopeId: string;
  /** L2-normalized, of the index's dimension. */
  readonly vector: Float32Array;
}

export interface VectorHit {
  readonly id: string;
  readonly kind: VectorKind;
  /** Cosine similarity, -1..1 (higher is closer). */
  readonly score: number;
}

/** What vector space an index holds; a different embedder means a different space. */
export interface IndexIdentity {
  readonly embedder: string;
  readonly dimension: number;
}

export interface VectorSearch {
  readonly scopeId: string;
  readonly vector: Float32Array;
  readonly limit: number;
  /** Only this kind (default: both). */
  readonly kind?: VectorKind;
  /**
   * How many of the best hits need their exact score and order (default: all `limit`). The hits
   * after them may carry an estimated score (within ~0.01 of the cosine) and come in the order of
   * their estimates, which lets an approximate index skip most of its exact re-ranking when the
   * caller ranks the tail with other evidence anyway (hybrid search). Indexes that are exact
   * anyway ignore it.
   */
  readonly exactTop?: number;
}

export interface VectorIndex {
  /** Creates storage if needed. Returns the identity recorded in the index, if any. */
  init(): Promise<IndexIdentity | null>;
  /** Records the identity of the vectors the index will hold (after a reindex starts, or on first use). */
  setIdentity(identity: IndexIdentity): Promise<void>;
  /** Inserts or replaces vectors (idempotent). */
  upsert(records: readonly VectorRecord[]): Promise<void>;
  /** Removes vectors of one scope by id (ids of other scopes are left alone). */
  delete(scopeId: string, ids: readonly string[]): Promise<void>;
  /** Removes every vector of a scope. */
  deleteScope(scopeId: string): Promise<void>;
  /** Removes everything and forgets the identity (reindex from scratch). */
  clear(): Promise<void>;
  /** Nearest vectors in one scope, best first. */
  search(query: VectorSearch): Promise<VectorHit[]>;
  /** How many vectors a scope has (of a kind, or all). */
  count(scopeId: string, kind?: VectorKind): Promise<number>;
  /**
   * The stored vectors of one scope with these ids (ids without a vector, or of another scope, are
   * left out; order not guaranteed). Lets a store migration carry vectors over instead of
   * re-embedding every row.
   */
  get(scopeId: string, ids: readonly string[]): Promise<VectorRecord[]>;
  /**
   * Writes a file store's write-ahead log into its main file and empties the log, so deleted
   * vectors leave no old page behind (forgetting calls it). Resolves false when a reader kept it
   * from completing. Stores without such a log leave it out.
   */
  checkpoint?(): Promise<boolean>;
  close(): Promise<void>;
}
