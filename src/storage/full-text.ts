/**
 * Full-text queries over the search index the migrations create (SQLite FTS5, PostgreSQL
 * tsvector). The index rows carry the scope id, and every query filters on it. Scores are BM25
 * from the scope's own statistics on both databases (scope-terms.ts).
 */
import type { DatabaseProvider, PrismaClient } from './prisma';
import type { ScopeTerms, SearchKind, TermRow } from './scope-terms';
import { pollUntil, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-lock-waits';
import { classifyStorageFailure } from './storage-errors';
import { openPostgresScopeTerms } from './scope-terms-postgres';
import { openSqliteScopeTerms } from './scope-terms-sqlite';

export type { SearchKind } from './scope-terms';

export interface KeywordHit {
  readonly id: string;
  /** Higher is better: BM25 over the query's words. */
  readonly score: number;
}

/**
 * English function words: in an OR query they match nearly every row and drown the words that
 * carry the question ("what did Caroline research" is about Caroline and research).
 */
const STOPWORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by can could did do does doing down during each ' +
    'few for from further had has have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on ' +
    'once only or other our ours ourselves out over own same she should so some such than that the their theirs them themselves then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you your yours yourself yourselves s t don ll m re ve d'
  ).split(' '),
);

/**
 * The words of a query, lower-cased, letters and digits only (no query syntax gets through),
 * without stopwords unless the query is made of nothing else.
 */
export function queryTerms(query: string): string[] {
  const words = [
    ...new Set(
      query
        .normalize('NFC')
        .toLowerCase()
        .match(/[\p{L}\p{N}]+/gu) ?? [],
    ),
  ];
  const content = words.filter((word) => !STOPWORDS.has(word));
  return (content.length > 0 ? content : words).slice(0, 64);
}

/** The query's words and, for each row matching any of them, the row's score for each word. */
export interface TermHits {
  readonly terms: string[];
  /** `scores[i]` is the score for `terms[i]` (0 where the row lacks the word). */
  readonly hits: ReadonlyArray<{ readonly id: string; readonly scores: number[] }>;
}

export interface FullTextIndex {
  search(params: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]>;
  /**
   * Like `search`, but scored word by word (the best `limit` rows of each word): BM25 is a sum
   * over the query's words, so the scores of a row add up to its `search` score, and
   * the parts tell which words a row holds (hybrid search scores passages of several turns).
   */
  searchTerms(params: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<TermHits>;
  /** Rows of the index that belong to a scope (forget and isolation checks read this). */
  countDocuments(scopeId: string, kind: SearchKind): Promise<number>;
  /**
   * Drops what deleted rows left inside the index (run after forgetting). SQLite's FTS5 answers a
   * delete with a tombstone and keeps the row's terms in its segments until they are merged, so a
   * forgotten word stays in `search_fts_data` (no longer findable, but in the file): 'optimize'
   * merges the segments without them, `secure_delete` (sqlite-driver.ts) zeroes the pages freed,
   * and a TRUNCATE checkpoint takes the old pages out of the write-ahead log. On PostgreSQL the
   * tsvector goes with its `search_doc` row and nothing is left to do (dead tuples are reclaimed by
   * autovacuum). On SQLite it rewrites the whole index: measured 0.4-0.5 s for 100,000 rows of
   * 20 words on 2 cores (better-sqlite3 is synchronous, so the process waits that long).
   * Another process reading the file (the running service) can hold the checkpoint back: it is
   * retried for up to ~2 s; resolves false when the log could still not be emptied.
   */
  purgeDeleted(): Promise<boolean>;
}

/**
 * A word held by more than this many rows (and more than one row in 20) is left out of a
 * query of several words: its BM25 weight is small (idf below ln 19 = 2.9, against 7-10 for a
 * word in a few rows), yet matching it means scoring every row that holds it. Of the rest, the
 * `MAX_QUERY_WORDS` rarest are kept. A word's rows are counted in the scope's range only up to
 * the point that makes it common (a name in 20,000 rows of a scope took ~14 ms to count in full).
 */
const COMMON_WORD_ROWS = 2_000;
const COMMON_WORD_SHARE = 0.05;
const MAX_QUERY_WORDS = 6;
/**
 * Rows of the scope a query's words may hold together. Scoring costs ~5-7 µs per row its words
 * hold in the scope (each row's key, length and text are read through Prisma, ~3.5-5.5 µs, and the
 * word counted in its words, ~1-2 µs), so this bounds the full-text part of a search however large
 * the scope grows (3,000 rows: ~15-20 ms): the rarest words are taken first and the commonest left
 * out once their rows would pass it (the first word is always kept). No LoCoMo question comes
 * near it (2,760 rows in all); in a 100,000-episode scope whose word lists are long it leaves out
 * 193 of the 503 words of the benchmark's 100 questions (6,000 left out 138, at twice the cost;
 * docs/retrieval.md). Other scopes' rows never count.
 */
const MAX_QUERY_ROWS = 3_000;
/**
 * A checkpoint held back by another process's reader is tried again this far apart, for as long
 * as twenty tries through the busy timeout used to wait. The connection's busy timeout is 0 (see
 * sqlite-lock-waits.ts), so each try returns at once and the process runs on in between.
 */
const CHECKPOINT_ATTEMPTS = 20;
const CHECKPOINT_RETRY_MS = 100;
const CHECKPOINT_WAIT_MS = CHECKPOINT_ATTEMPTS * (SQLITE_BUSY_TIMEOUT_MS + CHECKPOINT_RETRY_MS);

/** Rows of a scope (of `totalRows`) above which a word of a query of several words is common. */
export function commonWordRows(totalRows: number): number {
  return Math.max(COMMON_WORD_ROWS, COMMON_WORD_SHARE * totalRows);
}

/**
 * Which of the query's words to score, from the number of rows holding each: without the common
 * ones, the `MAX_QUERY_WORDS` rarest, and no more than `MAX_QUERY_ROWS` rows in all (at least one
 * word is kept). In the query's order, so word-by-word scores line up with the words a caller sees.
 */
export function chooseTerms(terms: readonly string[], rows: readonly number[], totalRows: number): string[] {
  if (terms.length === 0) return [];
  const limit = commonWordRows(totalRows);
  const rarest = terms.map((term, i) => ({ term, rows: rows[i] ?? 0 })).sort((a, b) => a.rows - b.rows);
  const kept = new Set<string>();
  let held = 0;
  for (const { term, rows: n } of rarest) {
    if (n > limit || kept.size === MAX_QUERY_WORDS || held + n > MAX_QUERY_ROWS) break;
    kept.add(term);
    held += n;
  }
  if (kept.size === 0) kept.add(rarest[0]!.term);
  return terms.filter((term) => kept.has(term));
}

/** BM25's parameters, as FTS5's bm25() uses them. */
const K1 = 1.2;
const B = 0.75;

/** FTS5's idf: never below 1e-6, as bm25() clamps it. */
function idf(rows: number, holding: number): number {
  const value = Math.log((rows - holding + 0.5) / (holding + 0.5));
  return value > 0 ? value : 1e-6;
}

/** BM25 of one word in one row. */
function bm25(tf: number, rowLength: number, meanLength: number, weight: number): number {
  return (weight * (tf * (K1 + 1))) / (tf + K1 * (1 - B + (B * rowLength) / meanLength));
}

/**
 * Rows whose words are counted exactly when the store reads rows without their counts (SQLite):
 * the best by BM25 with every count taken as 1. A word seldom occurs twice in a chat turn, and
 * hybrid search reads and ranks the best 200 keyword candidates; every row of a query whose words
 * hold no more than this is counted, so a scope of LoCoMo's size scores exactly as before.
 */
const EXACT_COUNT_ROWS = 600;

/**
 * Each word's count in the rows that can rank (see {@link EXACT_COUNT_ROWS}), where the store
 * read the rows without it; empty when it read them with it (PostgreSQL).
 */
async function exactFrequencies(
  scope: ScopeTerms,
  terms: readonly string[],
  rowsPerTerm: ReadonlyArray<readonly TermRow[]>,
  weights: readonly number[],
): Promise<Map<string, number[]>> {
  if (!scope.frequencies || rowsPerTerm.every((rows) => rows.every((row) => row.tf !== undefined))) return new Map();
  const guess = new Map<string, number>();
  rowsPerTerm.forEach((rows, t) => {
    for (const row of rows) guess.set(row.id, (guess.get(row.id) ?? 0) + bm25(row.tf ?? 1, row.length, scope.meanLength, weights[t]!));
  });
  const ranked =
    guess.size <= EXACT_COUNT_ROWS
      ? [...guess.keys()]
      : [...guess]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, EXACT_COUNT_ROWS)
          .map(([id]) => id);
  return scope.frequencies(ranked, terms);
}

/** Rows a scope's word lists may hold in one query, whatever else: bounds a query of one very common word (the newest are kept). */
const MAX_TERM_ROWS = 20_000;

export function createFullTextIndex(prisma: PrismaClient, provider: DatabaseProvider): FullTextIndex {
  /**
   * Per-scope statistics and per-scope cost (issues 16, 18 and 19): BM25 needs the number of rows,
   * the rows holding each word, the mean row length and each word's count in a row, and every one
   * of them is the scope's own (scope-terms.ts), so a person's ranking and its cost do not move with
   * what other scopes hold. FTS5's bm25() and PostgreSQL's ts_rank_cd are not used: the first
   * counts every scope's rows, the second is not BM25 (it ranked LoCoMo 4.8 points of R@10 lower).
   */
  const openScope = (scopeId: string, kind: SearchKind): Promise<ScopeTerms | undefined> =>
    provider === 'sqlite' ? openSqliteScopeTerms(prisma, scopeId, kind) : openPostgresScopeTerms(prisma, scopeId, kind);

  /** The query's informative words with, for each, every row of the scope holding it and its BM25. */
  async function scopeScores(scopeId: string, kind: SearchKind, query: string): Promise<{ terms: string[]; perTerm: Array<Map<string, number>> }> {
    const all = queryTerms(query);
    const scope = all.length > 0 ? await openScope(scopeId, kind) : undefined;
    if (!scope) return { terms: [], perTerm: [] };
    // In a query of several words a common word is left out whatever its exact count.
    const cap = all.length > 1 ? Math.floor(commonWordRows(scope.rows)) + 1 : undefined;
    let counts = await scope.counts(all, cap);
    // When every word is common the rarest is kept alone: which one it is, and its idf, need the
    // whole counts.
    if (cap !== undefined && counts.every((n) => n >= cap)) counts = await scope.counts(all);
    const terms = all.length <= 1 ? all : chooseTerms(all, counts, scope.rows);
    // The words' rows are read together (on PostgreSQL, over several pooled connections).
    const weights = terms.map((term) => idf(scope.rows, counts[all.indexOf(term)] ?? 0));
    const rowsPerTerm = await Promise.all(
      terms.map((term) => ((counts[all.indexOf(term)] ?? 0) === 0 || scope.rows === 0 ? Promise.resolve([]) : scope.holding(term, MAX_TERM_ROWS))),
    );
    const tfOf = await exactFrequencies(scope, terms, rowsPerTerm, weights);
    const perTerm = rowsPerTerm.map((rows, t) => {
      const scores = new Map<string, number>();
      for (const row of rows) scores.set(row.id, bm25(tfOf.get(row.id)?.[t] ?? row.tf ?? 1, row.length, scope.meanLength, weights[t]!));
      return scores;
    });
    return { terms, perTerm };
  }

  async function search({ scopeId, kind, query, limit }: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]> {
    const { perTerm } = await scopeScores(scopeId, kind, query);
    const sums = new Map<string, number>();
    for (const scores of perTerm) for (const [id, score] of scores) sums.set(id, (sums.get(id) ?? 0) + score);
    return [...sums]
      .map(([id, score]) => ({ id, score }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit);
  }

  return {
    search,
    async searchTerms({ scopeId, kind, query, limit }) {
      const byId = new Map<string, number[]>();
      const { terms, perTerm } = await scopeScores(scopeId, kind, query);
      perTerm.forEach((scores, t) => {
        const best = [...scores].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, limit);
        for (const [id, score] of best) {
          const row = byId.get(id) ?? new Array<number>(terms.length).fill(0);
          row[t] = Math.max(0, score);
          byId.set(id, row);
        }
      });
      return { terms, hits: [...byId].map(([id, scores]) => ({ id, scores })) };
    },
    async purgeDeleted() {
      if (provider !== 'sqlite') return true;
      // The checkpoint runs whatever the rewrite's outcome: the log's frames hold the forgotten
      // rows' text either way.
      const rewrite = await prisma.$executeRawUnsafe(`INSERT INTO "search_fts" ("search_fts") VALUES ('optimize')`).then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      const checkpointed = await pollUntil(
        async () => {
          try {
            // Returns a row (busy, log, checkpointed); a busy reader only makes it partial.
            const [row] = await prisma.$queryRawUnsafe<Array<{ busy: number | bigint }>>('PRAGMA wal_checkpoint(TRUNCATE)');
            return Number(row?.busy ?? 0) === 0;
          } catch (error) {
            // SQLITE_LOCKED while this connection is inside another transaction for a moment (seen
            // right after a /forget pressed in Telegram: the forget's checkpoint failed at once, and
            // the log kept the command's text until the next start); SQLITE_BUSY while another
            // checkpoint runs. Both pass: tried again.
            if (classifyStorageFailure(error) === 'busy') return false;
            throw error;
          }
        },
        CHECKPOINT_WAIT_MS,
        CHECKPOINT_RETRY_MS,
      );
      if (rewrite) throw rewrite.error;
      return checkpointed;
    },
    async countDocuments(scopeId, kind) {
      const rows = await prisma.$queryRaw<Array<{ n: bigint | number }>>`
        SELECT COUNT(*) AS n FROM "search_doc" WHERE "scope_id" = ${scopeId} AND "kind" = ${kind}`;
      return Number(rows[0]?.n ?? 0);
    },
  };
}
