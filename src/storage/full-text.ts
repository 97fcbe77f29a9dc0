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

/** The words of a query, lower-cased, letters and digits only (no query syntax gets through). */
export function queryTerms(query: string): string[] {
  const words = query.normalize('NFC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, 64);
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
