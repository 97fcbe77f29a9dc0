-- AlterTable
ALTER TABLE "Memory" ADD COLUMN "linkedAt" DATETIME;

-- CreateTable
CREATE TABLE "LlmCall" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT,
    "purpose" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "inputTokens" INTEGER NOT NULL DEFAULT 0,
    "outputTokens" INTEGER NOT NULL DEFAULT 0,
    "durationMs" INTEGER NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "runId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "LlmCall_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Lease" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "holder" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Entity" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'person',
    "attributes" JSONB,
    "favorability" REAL NOT NULL DEFAULT 0.3,
    "interactionCount" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Entity_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "EntityObservation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "entityId" TEXT NOT NULL,
    "episodeId" TEXT,
    "content" TEXT NOT NULL,
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "EntityObservation_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "EntityObservation_scopeId_entityId_fkey" FOREIGN KEY ("scopeId", "entityId") REFERENCES "Entity" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Episode" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "author" TEXT,
    "content" TEXT NOT NULL,
    "summary" TEXT,
    "timestamp" DATETIME NOT NULL,
    "conversationId" TEXT,
    "turn" INTEGER,
    "externalId" TEXT,
    "metadata" JSONB,
    "importance" REAL NOT NULL DEFAULT 0.5,
    "importanceSource" TEXT NOT NULL DEFAULT 'heuristic',
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "consolidationAttempts" INTEGER NOT NULL DEFAULT 0,
    "consolidatedAt" DATETIME,
    "contentHash" TEXT NOT NULL,
    "embeddedWith" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Episode_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Episode" ("author", "channel", "consolidated", "consolidatedAt", "content", "contentHash", "conversationId", "createdAt", "embeddedWith", "externalId", "id", "importance", "metadata", "role", "scopeId", "summary", "timestamp", "turn") SELECT "author", "channel", "consolidated", "consolidatedAt", "content", "contentHash", "conversationId", "createdAt", "embeddedWith", "externalId", "id", "importance", "metadata", "role", "scopeId", "summary", "timestamp", "turn" FROM "Episode";
DROP TABLE "Episode";
ALTER TABLE "new_Episode" RENAME TO "Episode";
CREATE INDEX "Episode_scopeId_timestamp_idx" ON "Episode"("scopeId", "timestamp");
CREATE INDEX "Episode_scopeId_consolidated_timestamp_idx" ON "Episode"("scopeId", "consolidated", "timestamp");
CREATE INDEX "Episode_scopeId_conversationId_timestamp_idx" ON "Episode"("scopeId", "conversationId", "timestamp");
CREATE INDEX "Episode_scopeId_conversationId_turn_idx" ON "Episode"("scopeId", "conversationId", "turn");
CREATE INDEX "Episode_embeddedWith_idx" ON "Episode"("embeddedWith");
CREATE UNIQUE INDEX "Episode_scopeId_id_key" ON "Episode"("scopeId", "id");
CREATE UNIQUE INDEX "Episode_scopeId_externalId_key" ON "Episode"("scopeId", "externalId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "LlmCall_scopeId_createdAt_idx" ON "LlmCall"("scopeId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "Entity_scopeId_key_key" ON "Entity"("scopeId", "key");

-- CreateIndex
CREATE UNIQUE INDEX "Entity_scopeId_id_key" ON "Entity"("scopeId", "id");

-- CreateIndex
CREATE INDEX "EntityObservation_scopeId_entityId_consolidated_idx" ON "EntityObservation"("scopeId", "entityId", "consolidated");

-- CreateIndex
CREATE INDEX "EntityObservation_scopeId_episodeId_idx" ON "EntityObservation"("scopeId", "episodeId");

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
