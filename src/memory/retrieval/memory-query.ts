/**
 * What a search asks for (seed 000's MemoryQuery, extended) and what it returns.
 */

export type SearchStrategy = 'semantic' | 'temporal' | 'keyword' | 'hybrid';
export type ResultKind = 'episode' | 'memory';

export interface MemoryQuery {
  /** The scope searched; nothing outside it can be returned. */
  readonly scopeId: string;
  /** Natural-language query (required for every strategy but temporal). */
  readonly semanticQuery?: string;
  readonly timeRange?: { readonly start?: Date; readonly end?: Date };
  /** Episodes tagged with any of these topics (memories are not tagged and are left out). */
  readonly topics?: readonly string[];
  /** Episodes tagged with any of these entities (memories are left out). */
  readonly entities?: readonly string[];
  readonly minImportance?: number;
  readonly limit?: number;
  readonly strategy?: SearchStrategy;
  /** Only episodes from this channel. */
  readonly channel?: string;
  /** History search: include every inactive memory, faded and superseded versions alike. */
  readonly includeInactive?: boolean;
  /**
   * Deep recall: include faded memories (deactivated, still current: never superseded) whatever
   * their confidence, but only those that share a word with the query. A memory fades for lack of
   * evidence, so the nearest vector alone (however far) must not bring it back; the person's own
   * words must name it.
   */
  readonly includeFaded?: boolean;
  /** Seed 003's second stage: only memories whose source trust is at least this. */
  readonly minSourceTrust?: number;
  /** Only memories at least this confident. */
  readonly minConfidence?: number;
  /** Which kinds to return (default both). */
  readonly kinds?: readonly ResultKind[];
  /** "Now" for recency; defaults to the clock. */
  readonly now?: Date;
}

/** The parts a score was made of, each 0-1 before weighting, so a result explains itself. */
export interface ScoreParts {
  semantic?: number;
  keyword?: number;
  recency?: number;
  importance?: number;
  confidence?: number;
  /** Relevance lent by the neighbouring turns of the same conversation. */
  context?: number;
  /** Closeness of the item's time to a date the query names ("on 8 May, 2023", "in August 2023"). */
  time?: number;
  /** Relevance of the item's conversation (session): its best turn's relevance, relative to the best conversation's. */
  session?: number;
  /** The item's author is a person the query names. */
  speaker?: number;
  /**
   * Keyword coverage of the passage around a turn: each query word counts once, with its best
   * BM25 among the turn and its neighbours, so a question split over a question and its answer
   * is matched as a whole.
   */
  passage?: number;
  /** How much an episode says: its word count relative to a full sentence (20 words), at most 1. */
  substance?: number;
  /**
   * 1 when a memory was lifted just above the best matching episode it (or an earlier version of
   * it) was learned from: knowledge ranks before its evidence (see `knowledge-first.ts`).
   */
  folded?: number;
}

export interface SearchResult {
  readonly kind: ResultKind;
  readonly id: string;
  readonly externalId: string | null;
  readonly content: string;
  readonly timestamp: Date;
  readonly score: number;
  readonly parts: ScoreParts;
  /** For memories: the episodes they came from. */
  readonly sourceEpisodes?: ReadonlyArray<{ id: string; externalId: string | null }>;
  readonly conversationId?: string | null;
  readonly role?: string;
  readonly author?: string | null;
  readonly category?: string;
  readonly confidence?: number;
  /** For memories: true when it has faded (deactivated, not superseded); found by deep recall. */
  readonly faded?: boolean;
}
