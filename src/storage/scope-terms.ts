/**
 * What BM25 needs to know about one scope's rows of one kind, read from the database's own
 * full-text index (SQLite FTS5: scope-terms-sqlite.ts; PostgreSQL tsvector: scope-terms-postgres.ts).
 * Every figure is the scope's own, so a person's scores and the cost of reading them do not depend
 * on what other scopes hold; full-text.ts computes the scores from them.
 */
export type SearchKind = 'episode' | 'memory';

/** A row holding a word: its id, its length in tokens and how often it holds the word. */
export interface TermRow {
  readonly id: string;
  readonly length: number;
  /** Absent when the row's text was not read with it: see {@link ScopeTerms.frequencies}. */
  readonly tf?: number;
}

export interface ScopeTerms {
  /** Rows of the scope of this kind. */
  readonly rows: number;
  /** Their mean length in tokens (1 when there are none). */
  readonly meanLength: number;
  /** Rows of the scope holding each word (at least one word), each counted up to `cap` when given. */
  counts(terms: readonly string[], cap?: number): Promise<number[]>;
  /** The rows of the scope holding a word, newest first, at most `limit`. */
  holding(term: string, limit: number): Promise<TermRow[]>;
  /**
   * How often each of `terms` occurs in each of these rows (of the scope), for rows `holding`
   * returned without their count: read for the rows that can rank, not for every row a word holds.
   */
  frequencies?(ids: readonly string[], terms: readonly string[]): Promise<Map<string, number[]>>;
}

/** The columns of `search_scope` holding a kind's row count and total length (the same on both databases). */
export function statisticsColumns(kind: SearchKind): { rows: string; tokens: string } {
  return kind === 'memory' ? { rows: 'memory_rows', tokens: 'memory_tokens' } : { rows: 'episode_rows', tokens: 'episode_tokens' };
}

/** Mean row length from a scope's row count and total length (1 for an empty scope). */
export function meanLength(rows: number, tokens: number): number {
  return rows > 0 ? tokens / rows : 1;
}

/** The counts of a query that returns one row with a column `s<i>` for each of `n` words. */
export function countsOf(result: ReadonlyArray<Record<string, bigint | number>>, n: number): number[] {
  const first = result[0] ?? {};
  return Array.from({ length: n }, (_, i) => Number(first[`s${i}`] ?? 0));
}

/** A cap on a count as SQL (`LIMIT n` inside the counted subquery), or nothing. */
export function capClause(cap: number | undefined): string {
  return cap === undefined ? '' : ` LIMIT ${Math.max(1, Math.floor(cap))}`;
}
