/**
 * A scope's full-text statistics on PostgreSQL (see scope-terms.ts). Lexemes carry a tag of their
 * scope and kind (prisma/postgres/search-index.sql), so the GIN index finds a word's rows of the
 * scope without reading other scopes' postings. Each `search_doc` row keeps its length (lexeme
 * occurrences; stopwords are not indexed) and `search_scope` the scope's rows and total length per
 * kind, kept current by the trigger; a word's count in a row is the number of its positions in the
 * row's tsvector. So BM25 here is computed as on SQLite, from the scope's own figures, with
 * PostgreSQL's `english` stemming and stopwords.
 */
import type { PrismaClient } from './prisma';
import { capClause, countsOf, meanLength, statisticsColumns, type ScopeTerms, type SearchKind, type TermRow } from './scope-terms';

/** The scope's statistics for one kind, or undefined when the scope has never had a row indexed. */
export async function openPostgresScopeTerms(prisma: PrismaClient, scopeId: string, kind: SearchKind): Promise<ScopeTerms | undefined> {
  const columns = statisticsColumns(kind);
  const found = await prisma.$queryRawUnsafe<Array<{ rows: bigint | number; tokens: bigint | number }>>(
    `SELECT "${columns.rows}" AS rows, "${columns.tokens}" AS tokens FROM "search_scope" WHERE "scope_id" = $1`,
    scopeId,
  );
  const row = found[0];
  if (!row) return undefined;
  const rows = Number(row.rows);
  return {
    rows,
    meanLength: meanLength(rows, Number(row.tokens)),
    async counts(terms, cap) {
      // Each word's tsquery is made once (a word PostgreSQL's `english` configuration drops, a
      // stopword there, makes none and counts 0), then matched through the GIN index.
      const result = await prisma.$queryRawUnsafe<Array<Record<string, bigint | number>>>(
        `WITH w AS MATERIALIZED (SELECT ${terms.map((_, i) => `"nocturne_search_tsquery"($1, $2, $${i + 3}) AS q${i}`).join(', ')}) ` +
          `SELECT ${terms.map((_, i) => `(SELECT COUNT(*) FROM (SELECT 1 FROM "search_doc" d, w WHERE d."tsv" @@ w.q${i} AND d."scope_id" = $1 AND d."kind" = $2${capClause(cap)}) c) AS s${i}`).join(', ')}`,
        scopeId,
        kind,
        ...terms,
      );
      return countsOf(result, terms.length);
    },
    async holding(term, limit) {
      // The word's count in a row is the number of its positions in the row's tsvector.
      const found = await prisma.$queryRawUnsafe<Array<{ id: string; length: number; tf: bigint | number | null }>>(
        `WITH w AS MATERIALIZED (SELECT "nocturne_search_tsquery"($1, $2, $3) AS q, tsvector_to_array("nocturne_search_tsvector"($1, $2, $3)) AS lexemes) ` +
          `SELECT d."ref_id" AS id, d."length" AS length, ` +
          `(SELECT sum(COALESCE(array_length(u."positions", 1), 1)) FROM unnest(d."tsv") AS u WHERE u."lexeme" = ANY(w."lexemes")) AS tf ` +
          `FROM "search_doc" d, w WHERE d."tsv" @@ w.q AND d."scope_id" = $1 AND d."kind" = $2 ORDER BY d."rowid" DESC LIMIT ${limit}`,
        scopeId,
        kind,
        term,
      );
      return found.map((r): TermRow => ({ id: r.id, length: Number(r.length), tf: Math.max(1, Number(r.tf ?? 1)) }));
    },
  };
}
