-- AlterTable
ALTER TABLE "Episode" ADD COLUMN "embeddedWith" TEXT;
ALTER TABLE "Episode" ADD COLUMN "turn" INTEGER;

-- AlterTable
ALTER TABLE "Memory" ADD COLUMN "embeddedWith" TEXT;

-- CreateIndex
CREATE INDEX "Episode_scopeId_conversationId_turn_idx" ON "Episode"("scopeId", "conversationId", "turn");

-- CreateIndex
CREATE INDEX "Episode_embeddedWith_idx" ON "Episode"("embeddedWith");

-- CreateIndex
CREATE INDEX "Memory_embeddedWith_idx" ON "Memory"("embeddedWith");

-- Full-text: index episodes as "author: content" (new triggers, existing rows re-indexed).
DROP TRIGGER IF EXISTS "episode_search_insert";
DROP TRIGGER IF EXISTS "episode_search_update";
CREATE TRIGGER IF NOT EXISTS "episode_search_insert_v2" AFTER INSERT ON "Episode" BEGIN
    INSERT INTO "search_doc" ("kind", "ref_id", "scope_id") VALUES ('episode', NEW."id", NEW."scopeId");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_update_v2" AFTER UPDATE OF "content", "author" ON "Episode" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
END;
DELETE FROM "search_fts" WHERE "rowid" IN (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode');
INSERT INTO "search_fts" ("rowid", "content")
    SELECT d."rowid", COALESCE(e."author" || ': ', '') || e."content" FROM "search_doc" d JOIN "Episode" e ON e."id" = d."ref_id" WHERE d."kind" = 'episode';
