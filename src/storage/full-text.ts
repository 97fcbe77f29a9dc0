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

export interface FullTextIndex {
  search(params: { scopeId: string; kind: SearchKind; query: string; limit: number }): Promise<KeywordHit[]>;
  /** Rows of the index that belong to a scope (forget and isolation checks read this). */
  countDocuments(scopeId: string, kind: SearchKind): Promise<number>;
}

export function createFullTextIndex(prisma: PrismaClient, provider: DatabaseProvider): FullTextIndex {
  return {
    async search({ scopeId, kind, query, limit }) {
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
    },
    async countDocuments(scopeId, kind) {
      const rows = await prisma.$queryRaw<Array<{ n: bigint | number }>>`
        SELECT COUNT(*) AS n FROM "search_doc" WHERE "scope_id" = ${scopeId} AND "kind" = ${kind}`;
      return Number(rows[0]?.n ?? 0);
    },
  };
}
