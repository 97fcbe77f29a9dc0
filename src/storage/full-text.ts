/**
 * Full-text queries over the search index the migrations create (SQLite FTS5, PostgreSQL
 * tsvector). The index rows carry the scope id, and every query filters on it.
 */
import { ftsTokens, termFrequency } from './fts-tokens';
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
 * `MAX_QUERY_WORDS` rarest are kept. Counting a word's rows in the scope's range is cheap
 * (~0.02 ms for 60 rows).
 */
const COMMON_WORD_ROWS = 2_000;
const COMMON_WORD_SHARE = 0.05;
const MAX_QUERY_WORDS = 6;
/**
 * Rows of the scope a query's words may hold together. Scoring costs a few µs per row its words
 * hold in the scope (each row's key, length and text are read, and the word counted in the
 * text), so this bounds the full-text part of a search however large the scope grows: the
 * rarest words are taken first and the commonest left out once their rows would pass it (the
 * first word is always kept). No LoCoMo question comes near it (2,760 rows in all); in the
 * 100k-episode benchmark, whose word lists are long, it leaves a word out of half the queries
 * (docs/retrieval.md). Other scopes' rows never count.
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

/** BM25's parameters, as FTS5's bm25() uses them. */
const K1 = 1.2;
const B = 0.75;

/**
 * Index rows are numbered by scope (prisma/sqlite/search-index.sql): a scope's number times 2^32,
 * plus 2^31 for memories, plus the row's place in its scope. One scope's rows of one kind are
 * thus one rowid range, and FTS5 reads a word's rows within a range without walking the rest of
 * its posting list.
 */
const SCOPE_SPAN = 2n ** 32n;
const KIND_SPAN = 2n ** 31n;

/** An FTS5 varint (SQLite's format: 7 bits a byte, high bit set while more follow, a 9th byte of 8 bits). */
function readVarint(bytes: Uint8Array, at = 0): [number, number] {
  let value = 0;
  for (let i = 0; i < 8; i++) {
    const byte = bytes[at + i] ?? 0;
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return [value, at + i + 1];
  }
  return [value * 256 + (bytes[at + 8] ?? 0), at + 9];
}

/** FTS5's idf: never below 1e-6, as bm25() clamps it. */
function idf(rows: number, holding: number): number {
  const value = Math.log((rows - holding + 0.5) / (holding + 0.5));
  return value > 0 ? value : 1e-6;
}

/** BM25 of one word in one row. */
function bm25(tf: number, rowLength: number, meanLength: number, weight: number): number {
  return (weight * (tf * (K1 + 1))) / (tf + K1 * (1 - B + (B * rowLength) / meanLength));
}

/** Rows a scope's word lists may hold in one query, whatever else: bounds a query of one very common word (the newest are kept). */
const MAX_TERM_ROWS = 20_000;

/** A scope's rows of one kind: their rowid range, how many there are and their mean length in tokens. */
interface ScopeRange {
  readonly lo: bigint;
  readonly hi: bigint;
  readonly rows: number;
  readonly meanLength: number;
}

/** The indexed text of a row (the triggers index the same expression). */
const ROW_TEXT: Record<SearchKind, { join: string; text: string }> = {
  episode: { join: `JOIN "Episode" t ON t."id" = d."ref_id"`, text: `COALESCE(t."author" || ': ', '') || t."content"` },
  memory: { join: `JOIN "Memory" t ON t."id" = d."ref_id"`, text: `t."content"` },
};

export function createFullTextIndex(prisma: PrismaClient, provider: DatabaseProvider): FullTextIndex {
  /**
   * Per-scope statistics and per-scope cost (issues 16 and 18): BM25 needs the number of rows, the
   * rows holding each word, the mean row length and each word's count in a row. FTS5's bm25()
   * takes the first three from the whole index, which all scopes share, and walks a word's whole
   * posting list to count its rows, so a scope's ranking moved with what other scopes held and its
   * cost grew with theirs. Here every figure is the scope's own and every read stays in the
   * scope's rowid range: the scope's row count and total length are kept by the triggers in
   * `search_scope`, FTS5 finds the scope's rows holding a word, their lengths come from
   * `search_fts_docsize`, the word's count in a row from the row's text (fts-tokens.ts replays
   * the tokenizer), and the score is computed here. PostgreSQL's ts_rank_cd uses no statistics of
   * other rows; its lexemes carry the scope (search-index.sql), so its cost is the scope's too.
   */

  /** The scope's rowid range for a kind, with its BM25 statistics (kept current by the triggers). */
  async function scopeRange(scopeId: string, kind: SearchKind): Promise<ScopeRange | undefined> {
    const [rowsColumn, tokensColumn] = kind === 'memory' ? ['memory_rows', 'memory_tokens'] : ['episode_rows', 'episode_tokens'];
    const found = await prisma.$queryRawUnsafe<Array<{ no: bigint | number; rows: bigint | number; tokens: bigint | number }>>(
      `SELECT "no", "${rowsColumn}" AS rows, "${tokensColumn}" AS tokens FROM "search_scope" WHERE "scope_id" = ?`,
      scopeId,
    );
    const row = found[0];
    if (!row) return undefined;
    const base = BigInt(row.no) * SCOPE_SPAN + (kind === 'memory' ? KIND_SPAN : 0n);
    const rows = Number(row.rows);
    return { lo: base + 1n, hi: base + KIND_SPAN - 1n, rows, meanLength: rows > 0 ? Number(row.tokens) / rows : 1 };
  }

  /** Rows of the scope holding each word. */
  async function termCounts(terms: readonly string[], range: ScopeRange): Promise<number[]> {
    if (terms.length === 0) return [];
    const counts = await prisma.$queryRawUnsafe<Array<Record<string, bigint | number>>>(
      `SELECT ${terms
        .map((_, i) => `(SELECT COUNT(*) FROM "search_fts" WHERE "search_fts" MATCH ? AND "rowid" BETWEEN ${range.lo} AND ${range.hi}) AS s${i}`)
        .join(', ')}`,
      ...terms.map((term) => `"${term}"`),
    );
    const row = counts[0] ?? {};
    return terms.map((_, i) => Number(row[`s${i}`] ?? 0));
  }

  /**
   * The query's informative words with, for each, every row of the scope holding it and its BM25
   * from the scope's own statistics (SQLite).
   */
  async function scopeScores(scopeId: string, kind: SearchKind, query: string): Promise<{ terms: string[]; perTerm: Array<Map<string, number>> }> {
    const all = queryTerms(query);
    const range = all.length > 0 ? await scopeRange(scopeId, kind) : undefined;
    if (!range) return { terms: [], perTerm: [] };
    const counts = await termCounts(all, range);
    const terms = all.length <= 1 ? all : chooseTerms(all, counts, range.rows);
    const { join, text } = ROW_TEXT[kind];
    const perTerm: Array<Map<string, number>> = [];
    // A row holding several of the query's words is tokenized once.
    const tokensOf = new Map<string, string[]>();
    for (const term of terms) {
      const scores = new Map<string, number>();
      perTerm.push(scores);
      const holding = counts[all.indexOf(term)] ?? 0;
      if (holding === 0 || range.rows === 0) continue;
      const rows = await prisma.$queryRawUnsafe<Array<{ id: string; sz: Uint8Array | null; text: string }>>(
        `SELECT d."ref_id" AS id, z."sz" AS sz, ${text} AS text FROM "search_fts" ` +
          `JOIN "search_doc" d ON d."rowid" = "search_fts"."rowid" JOIN "search_fts_docsize" z ON z."id" = "search_fts"."rowid" ${join} ` +
          `WHERE "search_fts" MATCH ? AND "search_fts"."rowid" BETWEEN ${range.lo} AND ${range.hi} AND d."scope_id" = ? ` +
          `ORDER BY "search_fts"."rowid" DESC LIMIT ${MAX_TERM_ROWS}`,
        `"${term}"`,
        scopeId,
      );
      const weight = idf(range.rows, holding);
      const stems = ftsTokens(term);
      for (const row of rows) {
        const length = row.sz ? readVarint(row.sz)[0] : 0;
        // FTS5 matched the row, so the word is there at least once (a word the tokenizer splits
        // in two is matched as a phrase: counted once).
        let tokens = tokensOf.get(row.id);
        if (!tokens) tokensOf.set(row.id, (tokens = ftsTokens(row.text)));
        const tf = stems.length === 1 ? Math.max(1, termFrequency(tokens, stems[0]!)) : 1;
        scores.set(row.id, bm25(tf, length, range.meanLength, weight));
      }
    }
    return { terms, perTerm };
  }

  async function search({ scopeId, kind, query, limit }: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]> {
    if (provider === 'sqlite') {
      const { perTerm } = await scopeScores(scopeId, kind, query);
      const sums = new Map<string, number>();
      for (const scores of perTerm) for (const [id, score] of scores) sums.set(id, (sums.get(id) ?? 0) + score);
      return [...sums]
        .map(([id, score]) => ({ id, score }))
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, limit);
    }
    const terms = queryTerms(query);
    if (terms.length === 0) return [];
    // The query's lexemes tagged with the scope and kind, as the rows' are (search-index.sql).
    const rows = await prisma.$queryRaw<Array<{ id: string; score: number }>>`
      SELECT d."ref_id" AS id, ts_rank_cd(d."tsv", q) AS score
      FROM "search_doc" d, "nocturne_search_tsquery"(${scopeId}, ${kind}, ${terms.join(' ')}) q
      WHERE d."scope_id" = ${scopeId} AND d."kind" = ${kind} AND d."tsv" @@ q
      ORDER BY score DESC LIMIT ${limit}`;
    return rows.map((row) => ({ id: row.id, score: Number(row.score) }));
  }

  return {
    search,
    async searchTerms({ scopeId, kind, query, limit }) {
      const byId = new Map<string, number[]>();
      if (provider === 'sqlite') {
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
      }
      const terms = queryTerms(query);
      const add = (t: number, id: string, score: number) => {
        const scores = byId.get(id) ?? new Array<number>(terms.length).fill(0);
        scores[t] = Math.max(0, score);
        byId.set(id, scores);
      };
      const perTerm = await Promise.all(terms.map((term) => search({ scopeId, kind, query: term, limit })));
      perTerm.forEach((hits, t) => hits.forEach((hit) => add(t, hit.id, hit.score)));
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
