-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Memory" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "category" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "confidence" REAL NOT NULL,
    "importance" REAL NOT NULL DEFAULT 0.5,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "reinforcementCount" INTEGER NOT NULL DEFAULT 1,
    "lastReinforcedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sourceType" TEXT NOT NULL DEFAULT 'stated',
    "sourceTrust" REAL NOT NULL DEFAULT 1,
    "validFrom" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "validTo" DATETIME,
    "supersededById" TEXT,
    "embeddedWith" TEXT,
    "linkedAt" DATETIME,
    "decaySteps" INTEGER NOT NULL DEFAULT 0,
    "accessCount" INTEGER NOT NULL DEFAULT 0,
    "lastAccessedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Memory_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "Memory_scopeId_supersededById_fkey" FOREIGN KEY ("scopeId", "supersededById") REFERENCES "Memory" ("scopeId", "id") ON DELETE NO ACTION ON UPDATE NO ACTION
);
INSERT INTO "new_Memory" ("active", "category", "confidence", "content", "createdAt", "embeddedWith", "id", "importance", "lastReinforcedAt", "linkedAt", "reinforcementCount", "scopeId", "sourceTrust", "sourceType", "supersededById", "updatedAt", "validFrom", "validTo") SELECT "active", "category", "confidence", "content", "createdAt", "embeddedWith", "id", "importance", "lastReinforcedAt", "linkedAt", "reinforcementCount", "scopeId", "sourceTrust", "sourceType", "supersededById", "updatedAt", "validFrom", "validTo" FROM "Memory";
DROP TABLE "Memory";
ALTER TABLE "new_Memory" RENAME TO "Memory";
CREATE INDEX "Memory_scopeId_active_category_idx" ON "Memory"("scopeId", "active", "category");
CREATE INDEX "Memory_scopeId_lastReinforcedAt_idx" ON "Memory"("scopeId", "lastReinforcedAt");
CREATE INDEX "Memory_embeddedWith_idx" ON "Memory"("embeddedWith");
CREATE UNIQUE INDEX "Memory_scopeId_id_key" ON "Memory"("scopeId", "id");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- Full-text search (prisma/sqlite/search-index.sql)
-- Full-text search for episodes and memories (SQLite FTS5), kept in sync by triggers in the same
-- transaction as the rows. Idempotent: the migration runner re-applies it after any migration
-- that rebuilds the Episode or Memory table (SQLite rebuilds drop a table's triggers).
--
-- Episodes are indexed as "author: content" so a question that names the speaker finds their turns.
--
-- search_doc gives every indexed row a stable integer key (FTS5 and sqlite-vec need integer
-- rowids; Prisma's rowids are not stable across table rebuilds or VACUUM). search_fts is
-- contentless: the text lives only in Episode/Memory, so a delete there leaves no copy behind.
CREATE TABLE IF NOT EXISTS "search_doc" (
    "rowid" INTEGER PRIMARY KEY AUTOINCREMENT,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "scope_id" TEXT NOT NULL,
    UNIQUE ("kind", "ref_id")
);
CREATE INDEX IF NOT EXISTS "search_doc_scope_kind" ON "search_doc" ("scope_id", "kind");
CREATE VIRTUAL TABLE IF NOT EXISTS "search_fts" USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

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
CREATE TRIGGER IF NOT EXISTS "episode_search_delete" AFTER DELETE ON "Episode" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id";
END;

CREATE TRIGGER IF NOT EXISTS "memory_search_insert" AFTER INSERT ON "Memory" BEGIN
    INSERT INTO "search_doc" ("kind", "ref_id", "scope_id") VALUES ('memory', NEW."id", NEW."scopeId");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_update" AFTER UPDATE OF "content" ON "Memory" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_delete" AFTER DELETE ON "Memory" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id";
END;
