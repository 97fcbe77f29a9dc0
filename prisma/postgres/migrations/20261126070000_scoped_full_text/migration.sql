-- Full text per scope (issue 18): lexemes carry their scope and kind, so a search reads only its
-- scope's posting lists (prisma/postgres/search-index.sql). Existing rows are re-indexed.
-- Full-text search (prisma/postgres/search-index.sql)
-- Full-text search for episodes and memories (PostgreSQL tsvector + GIN), kept in sync by a
-- trigger in the same transaction as the rows. Idempotent: the migration runner can re-apply it.
-- Episodes are indexed as "author: content" so a question that names the speaker finds their turns.
--
-- Lexemes carry their scope and kind (docs/retrieval.md, "Full text in a crowded store"): a row of
-- scope S holding "paint" is indexed under 'T:paint', T the first 8 hex digits of md5(S, kind), so
-- the GIN index keeps each scope's posting lists apart and a search reads only the scope's own.
-- ts_rank_cd looks at the row alone (its positions), so scores are those of the plain lexemes. Two
-- scopes whose tags collide only share posting lists: every query still filters on scope_id.
CREATE TABLE IF NOT EXISTS "search_doc" (
    "rowid" BIGSERIAL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "scope_id" TEXT NOT NULL,
    "tsv" TSVECTOR NOT NULL,
    UNIQUE ("kind", "ref_id")
);
CREATE INDEX IF NOT EXISTS "search_doc_tsv" ON "search_doc" USING GIN ("tsv");
CREATE INDEX IF NOT EXISTS "search_doc_scope_kind" ON "search_doc" ("scope_id", "kind");
-- No pending list: GIN's fast update collects new entries in one list that every search reads
-- whole (up to 4 MB, whoever wrote them), so a search would cost what the whole store recently took
-- in. Without it an insert updates the scope's posting lists directly.
ALTER INDEX "search_doc_tsv" SET (fastupdate = off);

CREATE OR REPLACE FUNCTION "nocturne_search_tag"("scope" TEXT, "kind" TEXT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT substr(md5("scope" || '/' || "kind"), 1, 8) $$;

-- A lexeme as tsvector and tsquery literals write it: quoted, with quotes and backslashes escaped.
CREATE OR REPLACE FUNCTION "nocturne_search_lexeme"("tag" TEXT, "lexeme" TEXT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT '''' || replace(replace("tag" || ':' || "lexeme", '\', '\\'), '''', '''''') || '''' $$;

CREATE OR REPLACE FUNCTION "nocturne_search_tsvector"("scope" TEXT, "kind" TEXT, "doc" TEXT) RETURNS TSVECTOR
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(string_agg("nocturne_search_lexeme"("nocturne_search_tag"("scope", "kind"), t."lexeme") || ':' || array_to_string(t."positions", ','), ' '), '')::tsvector
    FROM unnest(to_tsvector('english', "doc")) AS t
$$;

-- The words of a query as an OR of the scope's lexemes; NULL when none is left (stopwords only).
CREATE OR REPLACE FUNCTION "nocturne_search_tsquery"("scope" TEXT, "kind" TEXT, "words" TEXT) RETURNS TSQUERY
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT string_agg("nocturne_search_lexeme"("nocturne_search_tag"("scope", "kind"), t."lexeme"), ' | ')::tsquery
    FROM unnest(to_tsvector('english', "words")) AS t
$$;

CREATE OR REPLACE FUNCTION "nocturne_search_sync"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM "search_doc" WHERE "kind" = TG_ARGV[0] AND "ref_id" = OLD."id";
        RETURN OLD;
    END IF;
    INSERT INTO "search_doc" ("kind", "ref_id", "scope_id", "tsv")
        VALUES (TG_ARGV[0], NEW."id", NEW."scopeId",
                "nocturne_search_tsvector"(NEW."scopeId", TG_ARGV[0], COALESCE((to_jsonb(NEW) ->> 'author') || ': ', '') || NEW."content"))
        ON CONFLICT ("kind", "ref_id") DO UPDATE SET "tsv" = EXCLUDED."tsv", "scope_id" = EXCLUDED."scope_id";
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER "episode_search_sync" AFTER INSERT OR UPDATE OF "content", "author" OR DELETE ON "Episode"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('episode');
CREATE OR REPLACE TRIGGER "memory_search_sync" AFTER INSERT OR UPDATE OF "content" OR DELETE ON "Memory"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('memory');

UPDATE "search_doc" d SET "tsv" = "nocturne_search_tsvector"(d."scope_id", 'episode', COALESCE(e."author" || ': ', '') || e."content")
    FROM "Episode" e WHERE d."kind" = 'episode' AND d."ref_id" = e."id";
UPDATE "search_doc" d SET "tsv" = "nocturne_search_tsvector"(d."scope_id", 'memory', m."content")
    FROM "Memory" m WHERE d."kind" = 'memory' AND d."ref_id" = m."id";
-- Entries an earlier fast update left in the pending list go into the index now.
SELECT gin_clean_pending_list('"search_doc_tsv"'::regclass);
