/**
 * A scope's full-text statistics on SQLite (see scope-terms.ts). Index rows are numbered by scope
 * (prisma/sqlite/search-index.sql): a scope's number times 2^32, plus 2^31 for memories, plus the
 * row's place in its scope. One scope's rows of one kind are thus one rowid range, and FTS5 reads a
 * word's rows within a range without walking the rest of its posting list. The scope's row count
 * and total length are kept by the triggers in `search_scope`, a row's length comes from FTS5's
 * docsize record, and a word's count in a row from the row's text (fts-tokens.ts replays FTS5's
 * tokenizer for words of letters and digits, the only words a query has).
 */
import { ftsTokens, ftsWords, stemCount } from './fts-tokens';
import type { PrismaClient } from './prisma';
import { sqliteRead } from './sqlite-reads';
import { countsOf, meanLength, statisticsColumns, type ScopeTerms, type SearchKind, type TermRow } from './scope-terms';

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

/** The first byte of a row's docsize record (a 1-byte blob read as a character: its code is the byte below 128). */
const FIRST_BYTE = `unicode(CAST(substr(z."sz", 1, 1) AS TEXT))`;

/** The indexed text of a row (the triggers index the same expression). */
const ROW_TEXT: Record<SearchKind, { table: string; text: string }> = {
  episode: { table: 'Episode', text: `COALESCE(t."author" || ': ', '') || t."content"` },
  memory: { table: 'Memory', text: `t."content"` },
};

/** A count's cap as its statement's LIMIT (as `capClause` writes it). */
function capRows(cap: number): number {
  return Math.max(1, Math.floor(cap));
}

/** Rows whose text one statement reads (SQLite allows 32,766 parameters; a round number well below). */
const TEXT_CHUNK = 500;

/** The scope's statistics for one kind, or undefined when the scope has never had a row indexed. */
export async function openSqliteScopeTerms(prisma: PrismaClient, scopeId: string, kind: SearchKind): Promise<ScopeTerms | undefined> {
  const columns = statisticsColumns(kind);
  const found = await sqliteRead<{ no: bigint | number; rows: bigint | number; tokens: bigint | number }>(
    prisma,
    `SELECT "no", "${columns.rows}" AS rows, "${columns.tokens}" AS tokens FROM "search_scope" WHERE "scope_id" = ?`,
    [scopeId],
  );
  const row = found[0];
  if (!row) return undefined;
  const base = BigInt(row.no) * SCOPE_SPAN + (kind === 'memory' ? KIND_SPAN : 0n);
  const [lo, hi] = [base + 1n, base + KIND_SPAN - 1n];
  const rows = Number(row.rows);
  const { table, text } = ROW_TEXT[kind];
  return {
    rows,
    meanLength: meanLength(rows, Number(row.tokens)),
    async counts(terms, cap) {
      // The range and the cap are parameters, so the statement's text (kept prepared) depends on
      // the number of words only.
      const result = await sqliteRead<Record<string, bigint | number>>(
        prisma,
        `SELECT ${terms.map((_, i) => `(SELECT COUNT(*) FROM (SELECT 1 FROM "search_fts" WHERE "search_fts" MATCH ? AND "rowid" BETWEEN ? AND ?${cap === undefined ? '' : ' LIMIT ?'})) AS s${i}`).join(', ')}`,
        terms.flatMap((term) => (cap === undefined ? [`"${term}"`, lo, hi] : [`"${term}"`, lo, hi, capRows(cap)])),
      );
      return countsOf(result, terms.length);
    },
    async holding(term, limit) {
      // A length below 128 is the docsize record's first byte, read as a number in SQL (turning
      // the record into a JavaScript buffer cost ~1.2 µs a row); a longer row's record comes as hex
      // and is decoded here (a blob column that is NULL in some rows confuses Prisma's adapter).
      // The row's text is not read here: joining each row to its episode cost two-thirds of the
      // query (~18 of 27 µs a row on the loaded machine); `frequencies` reads it for the rows that can rank.
      const found = await sqliteRead<{ id: string; b0: bigint | number; sz: string | null }>(
        prisma,
        `SELECT d."ref_id" AS id, ${FIRST_BYTE} AS b0, CASE WHEN ${FIRST_BYTE} >= 128 THEN hex(z."sz") END AS sz FROM "search_fts" ` +
          `JOIN "search_doc" d ON d."rowid" = "search_fts"."rowid" JOIN "search_fts_docsize" z ON z."id" = "search_fts"."rowid" ` +
          `WHERE "search_fts" MATCH ? AND "search_fts"."rowid" BETWEEN ? AND ? AND d."scope_id" = ? ` +
          `ORDER BY "search_fts"."rowid" DESC LIMIT ?`,
        [`"${term}"`, lo, hi, scopeId, limit],
      );
      // The length is FTS5's own (docsize): it also counts what the JavaScript words leave out,
      // such as emoji newer than Unicode 6.1.
      return found.map((r): TermRow => ({ id: r.id, length: r.sz ? readVarint(Buffer.from(r.sz, 'hex'))[0] : Number(r.b0) }));
    },
    async frequencies(ids, terms) {
      const out = new Map<string, number[]>();
      const stems = terms.map((term) => ftsTokens(term));
      for (let i = 0; i < ids.length; i += TEXT_CHUNK) {
        const chunk = ids.slice(i, i + TEXT_CHUNK);
        // The ids as one JSON parameter: one statement text whatever their number.
        const found = await sqliteRead<{ id: string; text: string }>(
          prisma,
          `SELECT t."id" AS id, ${text} AS text FROM "${table}" t WHERE t."scopeId" = ? AND t."id" IN (SELECT "value" FROM json_each(?))`,
          [scopeId, JSON.stringify(chunk)],
        );
        for (const r of found) {
          const words = ftsWords(r.text);
          // FTS5 matched the row, so a word it holds is there at least once (a word the tokenizer
          // splits in two is matched as a phrase: counted once).
          out.set(
            r.id,
            stems.map((s) => (s.length === 1 ? Math.max(1, stemCount(words, s[0]!)) : 1)),
          );
        }
      }
      return out;
    },
  };
}
