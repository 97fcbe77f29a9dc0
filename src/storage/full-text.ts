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
}

export function createFullTextIndex(prisma: PrismaClient, provider: DatabaseProvider): FullTextIndex {
  async function search({ scopeId, kind, query, limit }: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]> {
    const terms = queryTerms(query);
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
      const terms = queryTerms(query);
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
    async countDocuments(scopeId, kind) {
      const rows = await prisma.$queryRaw<Array<{ n: bigint | number }>>`
        SELECT COUNT(*) AS n FROM "search_doc" WHERE "scope_id" = ${scopeId} AND "kind" = ${kind}`;
      return Number(rows[0]?.n ?? 0);
    },
  };
}
