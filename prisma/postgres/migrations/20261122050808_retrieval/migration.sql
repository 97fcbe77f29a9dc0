-- AlterTable
ALTER TABLE "Episode" ADD COLUMN     "embeddedWith" TEXT,
ADD COLUMN     "turn" INTEGER;

-- AlterTable
ALTER TABLE "Memory" ADD COLUMN     "embeddedWith" TEXT;

-- CreateIndex
CREATE INDEX "Episode_scopeId_conversationId_turn_idx" ON "Episode"("scopeId", "conversationId", "turn");

-- CreateIndex
CREATE INDEX "Episode_embeddedWith_idx" ON "Episode"("embeddedWith");

-- CreateIndex
CREATE INDEX "Memory_embeddedWith_idx" ON "Memory"("embeddedWith");

-- Full-text: index episodes as "author: content" (new function and trigger, existing rows re-indexed).
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

UPDATE "search_doc" d SET "tsv" = to_tsvector('english', COALESCE(e."author" || ': ', '') || e."content")
    FROM "Episode" e WHERE d."kind" = 'episode' AND d."ref_id" = e."id";
