-- BM25 from the scope's own statistics on PostgreSQL too, and accents folded as on SQLite
-- (issue 19): each search_doc row keeps its length and "search_scope" each scope's rows and total
-- length per kind, kept by the trigger (prisma/postgres/search-index.sql). Existing rows are
-- re-indexed (their accents folded), get their lengths, and scopes their statistics.
-- Full-text search (prisma/postgres/search-index.sql)
-- Full-text search for episodes and memories (PostgreSQL tsvector + GIN), kept in sync by a
-- trigger in the same transaction as the rows. Idempotent: the migration runner can re-apply it.
-- Episodes are indexed as "author: content" so a question that names the speaker finds their turns.
--
-- Lexemes carry their scope and kind (docs/retrieval.md, "Full text in a crowded store"): a row of
-- scope S holding "paint" is indexed under 'T:paint', T the first 8 hex digits of md5(S, kind), so
-- the GIN index keeps each scope's posting lists apart and a search reads only the scope's own.
-- Two scopes whose tags collide only share posting lists: every query still filters on scope_id.
--
-- Search scores are BM25 computed from the scope's own statistics (src/storage/full-text-postgres.ts),
-- as on SQLite: each row keeps its length in lexeme occurrences (stopwords are not indexed, so they
-- do not count), and "search_scope" keeps each scope's rows and total length per kind, both kept
-- current by the trigger. A scope's statistics are one row, so a transaction writing one scope
-- locks one statistics row, whatever kinds it writes.
CREATE TABLE IF NOT EXISTS "search_doc" (
    "rowid" BIGSERIAL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "scope_id" TEXT NOT NULL,
    "tsv" TSVECTOR NOT NULL,
    "length" INTEGER NOT NULL DEFAULT 0,
    UNIQUE ("kind", "ref_id")
);
ALTER TABLE "search_doc" ADD COLUMN IF NOT EXISTS "length" INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS "search_scope" (
    "scope_id" TEXT PRIMARY KEY,
    "episode_rows" BIGINT NOT NULL DEFAULT 0,
    "episode_tokens" BIGINT NOT NULL DEFAULT 0,
    "memory_rows" BIGINT NOT NULL DEFAULT 0,
    "memory_tokens" BIGINT NOT NULL DEFAULT 0
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

-- Accents are folded, as SQLite's tokenizer does ("creme" finds "crème"), with the unaccent
-- extension (in PostgreSQL's contrib; trusted, so the database's owner may create it). A server
-- without it indexes words as written, and `npm run cli -- doctor` says so.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS "unaccent";
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'unaccent is not available (%): full-text search keeps accents', SQLERRM;
END
$$;
DO $$
DECLARE
    "home" TEXT := (SELECT n."nspname" FROM pg_extension e JOIN pg_namespace n ON n."oid" = e."extnamespace" WHERE e."extname" = 'unaccent');
BEGIN
    IF "home" IS NULL THEN
        CREATE OR REPLACE FUNCTION "nocturne_search_fold"("doc" TEXT) RETURNS TEXT
            LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT "doc"';
    ELSE
        -- The dictionary is named with its schema: a trigger may run with another search_path.
        EXECUTE format('CREATE OR REPLACE FUNCTION "nocturne_search_fold"("doc" TEXT) RETURNS TEXT LANGUAGE sql STABLE PARALLEL SAFE AS %L',
                       format('SELECT %I.unaccent(%L::regdictionary, "doc")', "home", quote_ident("home") || '.unaccent'));
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION "nocturne_search_tsvector"("scope" TEXT, "kind" TEXT, "doc" TEXT) RETURNS TSVECTOR
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(string_agg("nocturne_search_lexeme"("nocturne_search_tag"("scope", "kind"), t."lexeme") || ':' || array_to_string(t."positions", ','), ' '), '')::tsvector
    FROM unnest(to_tsvector('english', "nocturne_search_fold"("doc"))) AS t
$$;

-- The words of a query as an OR of the scope's lexemes; NULL when none is left (stopwords only).
CREATE OR REPLACE FUNCTION "nocturne_search_tsquery"("scope" TEXT, "kind" TEXT, "words" TEXT) RETURNS TSQUERY
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT string_agg("nocturne_search_lexeme"("nocturne_search_tag"("scope", "kind"), t."lexeme"), ' | ')::tsquery
    FROM unnest(to_tsvector('english', "nocturne_search_fold"("words"))) AS t
$$;

-- A row's length for BM25: its lexeme occurrences (a lexeme without positions counts once).
CREATE OR REPLACE FUNCTION "nocturne_search_length"("tsv" TSVECTOR) RETURNS INTEGER
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(sum(COALESCE(array_length(t."positions", 1), 1)), 0)::INTEGER FROM unnest("tsv") AS t
$$;

-- Adds to a scope's statistics of one kind. Only an addition creates the scope's row, so what a
-- deleted scope's cascade subtracts never brings its row back.
CREATE OR REPLACE FUNCTION "nocturne_search_count"("p_scope" TEXT, "p_kind" TEXT, "p_rows" INTEGER, "p_tokens" INTEGER) RETURNS VOID
    LANGUAGE plpgsql AS $$
DECLARE
    "is_memory" BOOLEAN := "p_kind" = 'memory';
BEGIN
    UPDATE "search_scope" SET
        "episode_rows" = "episode_rows" + CASE WHEN "is_memory" THEN 0 ELSE "p_rows" END,
        "episode_tokens" = "episode_tokens" + CASE WHEN "is_memory" THEN 0 ELSE "p_tokens" END,
        "memory_rows" = "memory_rows" + CASE WHEN "is_memory" THEN "p_rows" ELSE 0 END,
        "memory_tokens" = "memory_tokens" + CASE WHEN "is_memory" THEN "p_tokens" ELSE 0 END
        WHERE "scope_id" = "p_scope";
    IF NOT FOUND AND "p_rows" > 0 THEN
        -- The scope's first row: its statistics start at zero (another transaction may have just
        -- made them), then the addition goes through the update above.
        INSERT INTO "search_scope" ("scope_id") VALUES ("p_scope") ON CONFLICT ("scope_id") DO NOTHING;
        PERFORM "nocturne_search_count"("p_scope", "p_kind", "p_rows", "p_tokens");
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION "nocturne_search_sync"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    "old_scope" TEXT;
    "old_length" INTEGER;
    "doc" TSVECTOR;
    "doc_length" INTEGER;
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM "search_doc" WHERE "kind" = TG_ARGV[0] AND "ref_id" = OLD."id" RETURNING "scope_id", "length" INTO "old_scope", "old_length";
        IF FOUND THEN
            PERFORM "nocturne_search_count"("old_scope", TG_ARGV[0], -1, -"old_length");
        END IF;
        RETURN OLD;
    END IF;
    "doc" := "nocturne_search_tsvector"(NEW."scopeId", TG_ARGV[0], COALESCE((to_jsonb(NEW) ->> 'author') || ': ', '') || NEW."content");
    "doc_length" := "nocturne_search_length"("doc");
    SELECT "scope_id", "length" INTO "old_scope", "old_length" FROM "search_doc" WHERE "kind" = TG_ARGV[0] AND "ref_id" = NEW."id" FOR UPDATE;
    IF FOUND THEN
        UPDATE "search_doc" SET "tsv" = "doc", "scope_id" = NEW."scopeId", "length" = "doc_length" WHERE "kind" = TG_ARGV[0] AND "ref_id" = NEW."id";
        PERFORM "nocturne_search_count"("old_scope", TG_ARGV[0], -1, -"old_length");
    ELSE
        INSERT INTO "search_doc" ("kind", "ref_id", "scope_id", "tsv", "length") VALUES (TG_ARGV[0], NEW."id", NEW."scopeId", "doc", "doc_length");
    END IF;
    PERFORM "nocturne_search_count"(NEW."scopeId", TG_ARGV[0], 1, "doc_length");
    RETURN NEW;
END
$$;

-- A deleted scope's statistics go with it (its rows' own triggers have subtracted them by then).
CREATE OR REPLACE FUNCTION "nocturne_search_scope_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "search_scope" WHERE "scope_id" = OLD."id";
    RETURN OLD;
END
$$;

CREATE OR REPLACE TRIGGER "episode_search_sync" AFTER INSERT OR UPDATE OF "content", "author" OR DELETE ON "Episode"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('episode');
CREATE OR REPLACE TRIGGER "memory_search_sync" AFTER INSERT OR UPDATE OF "content" OR DELETE ON "Memory"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('memory');
CREATE OR REPLACE TRIGGER "scope_search_delete" AFTER DELETE ON "Scope"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_scope_delete"();

UPDATE "search_doc" d SET "tsv" = "nocturne_search_tsvector"(d."scope_id", 'episode', COALESCE(e."author" || ': ', '') || e."content")
    FROM "Episode" e WHERE d."kind" = 'episode' AND d."ref_id" = e."id";
UPDATE "search_doc" d SET "tsv" = "nocturne_search_tsvector"(d."scope_id", 'memory', m."content")
    FROM "Memory" m WHERE d."kind" = 'memory' AND d."ref_id" = m."id";
UPDATE "search_doc" SET "length" = "nocturne_search_length"("tsv");
INSERT INTO "search_scope" ("scope_id", "episode_rows", "episode_tokens", "memory_rows", "memory_tokens")
    SELECT "scope_id",
           count(*) FILTER (WHERE "kind" = 'episode'), COALESCE(sum("length") FILTER (WHERE "kind" = 'episode'), 0),
           count(*) FILTER (WHERE "kind" = 'memory'), COALESCE(sum("length") FILTER (WHERE "kind" = 'memory'), 0)
    FROM "search_doc" GROUP BY "scope_id"
    ON CONFLICT ("scope_id") DO UPDATE SET "episode_rows" = EXCLUDED."episode_rows", "episode_tokens" = EXCLUDED."episode_tokens",
                                          "memory_rows" = EXCLUDED."memory_rows", "memory_tokens" = EXCLUDED."memory_tokens";
