/**
 * Full-text queries over the search index the migrations create (SQLite FTS5, PostgreSQL
 * tsvector). The index rows carry the scope id, and every query filters on it.
 */
import type { DatabaseProvider, PrismaClient } from './prisma';

export type SearchKind = 'episode' | 'memory';

export interface KeywordHit {
  readonly id: string;
  /** Higher is better: BM25 on SQLite, ts_rank_cd on PostgreSQL. */
  readonly score: number;
}

/**
 * English function words: in an OR query they match nearly every row and drown the words that
 * carry the question ("what did Caroline research" is about Caroline and research).
 */
const STOPWORDS = new Set(
  ('a about above after again against all am an and any are as at be because been before being below between both but by can could did do does doing down during each ' +
    'few for from further had has have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on ' +
    'once only or other our ours ourselves out over own same she should so some such than that the their theirs them themselves then there these they this those through to ' +
    'too under until up very was we were what when where which while who whom why will with would you your yours yourself yourselves s t don ll m re ve d').split(' '),
);

/**
 * The words of a query, lower-cased, letters and digits only (no query syntax gets through),
 * without stopwords unless the query is made of nothing else.
 */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.normalize('NFC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
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
   * over the query's words, so on SQLite the scores of a row add up to its `search` score, and
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
 * word in a few rows), yet matching it means scoring every row that holds it — 20-40 ms for a
 * name in a fifth of 100,000 rows, against 1-3 ms for an informative word. Of the rest, the
 * `MAX_QUERY_WORDS` rarest are kept. Counting a word's rows only walks its posting list (~1 ms).
 */
const COMMON_WORD_ROWS = 2_000;
const COMMON_WORD_SHARE = 0.05;
const DOC_COUNT_TTL_MS = 60_000;
const MAX_QUERY_WORDS = 6;
/**
 * Rows a query's words may hold together. Scoring a query costs ~2.5 µs per row its words hold
 * in the whole index (the index is shared by all scopes; each row is matched, checked for the
 * scope and ranked), so this bounds the full-text part of a search to ~15 ms however large the
 * store grows: the rarest words are taken first and the commonest left out once their rows
 * would pass it (the first word is always kept). No LoCoMo question comes near it (2,760 rows in
 * all); in the 100k-episode benchmark, whose word lists are long, it leaves a word out of half
 * the queries (docs/retrieval.md).
 */
const MAX_QUERY_ROWS = 6_000;
/** A checkpoint held back by another process's reader is retried this often, this far apart. */
const CHECKPOINT_ATTEMPTS = 20;
const CHECKPOINT_RETRY_MS = 100;

/**
 * Which of the query's words to score, from the number of rows holding each: without the common
 * ones, the `MAX_QUERY_WORDS` rarest, and no more than `MAX_QUERY_ROWS` rows in all (at least one
 * word is kept). In the query's order, so word-by-word scores line up with the words a caller sees.
 */
export function chooseTerms(terms: readonly string[], rows: readonly number[], totalRows: number): string[] {
  if (terms.length === 0) return [];
  const limit = Math.max(COMMON_WORD_ROWS, COMMON_WORD_SHARE * totalRows);
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

export function createFullTextIndex(prisma: PrismaClient, provider: DatabaseProvider): FullTextIndex {
  let docCount = { rows: 0, at: Number.NEGATIVE_INFINITY };

  async function totalRows(): Promise<number> {
    if (Date.now() - docCount.at > DOC_COUNT_TTL_MS) {
      const rows = await prisma.$queryRaw<Array<{ n: bigint | number }>>`SELECT COUNT(*) AS n FROM "search_doc"`;
      docCount = { rows: Number(rows[0]?.n ?? 0), at: Date.now() };
    }
    return docCount.rows;
  }

  /** The query's words without those nearly every row holds (SQLite; at least one word is kept). */
  async function informativeTerms(terms: string[]): Promise<string[]> {
    if (provider !== 'sqlite' || terms.length <= 1) return terms;
    const total = await totalRows();
    const counts = await prisma.$queryRawUnsafe<Array<Record<string, bigint | number>>>(
      `SELECT ${terms.map((_, i) => `(SELECT COUNT(*) FROM "search_fts" WHERE "search_fts" MATCH ?) AS c${i}`).join(', ')}`,
      ...terms.map((term) => `"${term}"`),
    );
    return chooseTerms(terms, terms.map((_, i) => Number(counts[0]?.[`c${i}`] ?? 0)), total);
  }

  async function search({ scopeId, kind, query, limit }: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]> {
    const terms = await informativeTerms(queryTerms(query));
    if (terms.length === 0) return [];
    if (provider === 'sqlite') {
      const match = terms.map((term) => `"${term}"`).join(' OR ');
      const rows = await prisma.$queryRaw<Array<{ id: string; rank: number }>>`
        SELECT d."ref_id" AS id, bm25("search_fts") AS rank
        FROM "search_fts" JOIN "search_doc" d ON d."rowid" = "search_fts"."rowid"
        WHERE "search_fts" MATCH ${match} AND d."scope_id" = ${scopeId} AND d."kind" = ${kind}
        ORDER BY rank LIMIT ${limit}`;
      return rows.map((row) => ({ id: row.id, score: -Number(row.rank) }));
    }
    const tsquery = terms.join(' | ');
    const rows = await prisma.$queryRaw<Array<{ id: string; score: number }>>`
      SELECT d."ref_id" AS id, ts_rank_cd(d."tsv", q) AS score
      FROM "search_doc" d, to_tsquery('english', ${tsquery}) q
      WHERE d."scope_id" = ${scopeId} AND d."kind" = ${kind} AND d."tsv" @@ q
      ORDER BY score DESC LIMIT ${limit}`;
    return rows.map((row) => ({ id: row.id, score: Number(row.score) }));
  }

  return {
    search,
    async searchTerms({ scopeId, kind, query, limit }) {
      const terms = await informativeTerms(queryTerms(query));
      const byId = new Map<string, number[]>();
      const add = (t: number, id: string, score: number) => {
        const scores = byId.get(id) ?? new Array<number>(terms.length).fill(0);
        scores[t] = Math.max(0, score);
        byId.set(id, scores);
      };
      if (provider === 'sqlite' && terms.length > 0) {
        // One statement for all words (a round trip per word costs more than the ranking).
        // Words are letters and digits only (queryTerms) and are passed as parameters.
        const perTerm = terms.map(
          (_, t) =>
            `SELECT * FROM (SELECT ${t} AS t, d."ref_id" AS id, bm25("search_fts") AS rank FROM "search_fts" JOIN "search_doc" d ON d."rowid" = "search_fts"."rowid" ` +
            `WHERE "search_fts" MATCH ? AND d."scope_id" = ? AND d."kind" = ? ORDER BY rank LIMIT ?)`,
        );
        const params = terms.flatMap((term) => [`"${term}"`, scopeId, kind, limit]);
        const rows = await prisma.$queryRawUnsafe<Array<{ t: number | bigint; id: string; rank: number }>>(perTerm.join(' UNION ALL '), ...params);
        for (const row of rows) add(Number(row.t), row.id, -Number(row.rank));
      } else {
        const perTerm = await Promise.all(terms.map((term) => search({ scopeId, kind, query: term, limit })));
        perTerm.forEach((hits, t) => hits.forEach((hit) => add(t, hit.id, hit.score)));
      }
      return { terms, hits: [...byId].map(([id, scores]) => ({ id, scores })) };
    },
    async purgeDeleted() {
      if (provider !== 'sqlite') return true;
      await prisma.$executeRawUnsafe(`INSERT INTO "search_fts" ("search_fts") VALUES ('optimize')`);
      for (let attempt = 1; ; attempt++) {
        // Returns a row (busy, log, checkpointed); a busy reader only makes it partial, never an error.
        const [row] = await prisma.$queryRawUnsafe<Array<{ busy: number | bigint }>>('PRAGMA wal_checkpoint(TRUNCATE)');
        if (Number(row?.busy ?? 0) === 0) return true;
        if (attempt >= CHECKPOINT_ATTEMPTS) return false;
        await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_RETRY_MS));
      }
    },
    async countDocuments(scopeId, kind) {
      const rows = await prisma.$queryRaw<Array<{ n: bigint | number }>>`
        SELECT COUNT(*) AS n FROM "search_doc" WHERE "scope_id" = ${scopeId} AND "kind" = ${kind}`;
      return Number(rows[0]?.n ?? 0);
    },
  };
}
