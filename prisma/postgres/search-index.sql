-- Full-text search for episodes and memories (PostgreSQL tsvector + GIN), kept in sync by a
-- trigger in the same transaction as the rows. Idempotent: the migration runner can re-apply it.
-- Episodes are indexed as "author: content" so a question that names the speaker finds their turns.
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

CREATE OR REPLACE FUNCTION "nocturne_search_sync"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM "search_doc" WHERE "kind" = TG_ARGV[0] AND "ref_id" = OLD."id";
        RETURN OLD;
    END IF;
    INSERT INTO "search_doc" ("kind", "ref_id", "scope_id", "tsv")
        VALUES (TG_ARGV[0], NEW."id", NEW."scopeId", to_tsvector('english', COALESCE((to_jsonb(NEW) ->> 'author') || ': ', '') || NEW."content"))
        ON CONFLICT ("kind", "ref_id") DO UPDATE SET "tsv" = EXCLUDED."tsv", "scope_id" = EXCLUDED."scope_id";
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER "episode_search_sync" AFTER INSERT OR UPDATE OF "content", "author" OR DELETE ON "Episode"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('episode');
CREATE OR REPLACE TRIGGER "memory_search_sync" AFTER INSERT OR UPDATE OF "content" OR DELETE ON "Memory"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('memory');
