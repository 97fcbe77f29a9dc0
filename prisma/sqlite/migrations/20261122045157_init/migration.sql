-- CreateTable
CREATE TABLE "Scope" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "key" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'user',
    "title" TEXT,
    "ownerId" TEXT,
    "timezone" TEXT,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "settings" JSONB,
    "lastMessageAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "Episode" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "author" TEXT,
    "content" TEXT NOT NULL,
    "summary" TEXT,
    "timestamp" DATETIME NOT NULL,
    "conversationId" TEXT,
    "externalId" TEXT,
    "metadata" JSONB,
    "importance" REAL NOT NULL DEFAULT 0.5,
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "consolidatedAt" DATETIME,
    "contentHash" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Episode_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "EpisodeTag" (
    "scopeId" TEXT NOT NULL,
    "episodeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    PRIMARY KEY ("episodeId", "kind", "value"),
    CONSTRAINT "EpisodeTag_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "EpisodeTag_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Memory" (
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
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Memory_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "Memory_scopeId_supersededById_fkey" FOREIGN KEY ("scopeId", "supersededById") REFERENCES "Memory" ("scopeId", "id") ON DELETE NO ACTION ON UPDATE NO ACTION
);

-- CreateTable
CREATE TABLE "MemorySource" (
    "scopeId" TEXT NOT NULL,
    "memoryId" TEXT NOT NULL,
    "episodeId" TEXT NOT NULL,

    PRIMARY KEY ("memoryId", "episodeId"),
    CONSTRAINT "MemorySource_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "MemorySource_scopeId_memoryId_fkey" FOREIGN KEY ("scopeId", "memoryId") REFERENCES "Memory" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "MemorySource_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "MemoryLink" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "fromId" TEXT NOT NULL,
    "toId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "score" REAL,
    "reason" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "MemoryLink_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "MemoryLink_scopeId_fromId_fkey" FOREIGN KEY ("scopeId", "fromId") REFERENCES "Memory" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "MemoryLink_scopeId_toId_fkey" FOREIGN KEY ("scopeId", "toId") REFERENCES "Memory" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "runId" TEXT,
    "action" TEXT NOT NULL,
    "subjectType" TEXT NOT NULL,
    "subjectId" TEXT,
    "before" JSONB,
    "after" JSONB,
    "reason" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "AuditEvent_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "SleepRun" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME,
    "episodeCount" INTEGER NOT NULL DEFAULT 0,
    "llmCalls" INTEGER NOT NULL DEFAULT 0,
    "inputTokens" INTEGER NOT NULL DEFAULT 0,
    "outputTokens" INTEGER NOT NULL DEFAULT 0,
    "stats" JSONB,
    "error" TEXT,
    CONSTRAINT "SleepRun_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Digest" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "periodStart" DATETIME NOT NULL,
    "periodEnd" DATETIME NOT NULL,
    "content" TEXT NOT NULL,
    "items" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "sentAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Digest_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Profile" (
    "scopeId" TEXT NOT NULL PRIMARY KEY,
    "soul" TEXT NOT NULL,
    "data" JSONB,
    "version" INTEGER NOT NULL DEFAULT 1,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Profile_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Conversation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'open',
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActivityAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "endedAt" DATETIME,
    "endReason" TEXT,
    "summary" TEXT,
    "state" JSONB,
    CONSTRAINT "Conversation_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "Scope_key_key" ON "Scope"("key");

-- CreateIndex
CREATE INDEX "Episode_scopeId_timestamp_idx" ON "Episode"("scopeId", "timestamp");

-- CreateIndex
CREATE INDEX "Episode_scopeId_consolidated_timestamp_idx" ON "Episode"("scopeId", "consolidated", "timestamp");

-- CreateIndex
CREATE INDEX "Episode_scopeId_conversationId_timestamp_idx" ON "Episode"("scopeId", "conversationId", "timestamp");

-- CreateIndex
CREATE UNIQUE INDEX "Episode_scopeId_id_key" ON "Episode"("scopeId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "Episode_scopeId_externalId_key" ON "Episode"("scopeId", "externalId");

-- CreateIndex
CREATE INDEX "EpisodeTag_scopeId_kind_value_idx" ON "EpisodeTag"("scopeId", "kind", "value");

-- CreateIndex
CREATE INDEX "Memory_scopeId_active_category_idx" ON "Memory"("scopeId", "active", "category");

-- CreateIndex
CREATE INDEX "Memory_scopeId_lastReinforcedAt_idx" ON "Memory"("scopeId", "lastReinforcedAt");

-- CreateIndex
CREATE UNIQUE INDEX "Memory_scopeId_id_key" ON "Memory"("scopeId", "id");

-- CreateIndex
CREATE INDEX "MemorySource_scopeId_episodeId_idx" ON "MemorySource"("scopeId", "episodeId");

-- CreateIndex
CREATE INDEX "MemoryLink_scopeId_toId_idx" ON "MemoryLink"("scopeId", "toId");

-- CreateIndex
CREATE UNIQUE INDEX "MemoryLink_fromId_toId_kind_key" ON "MemoryLink"("fromId", "toId", "kind");

-- CreateIndex
CREATE INDEX "AuditEvent_scopeId_createdAt_idx" ON "AuditEvent"("scopeId", "createdAt");

-- CreateIndex
CREATE INDEX "AuditEvent_runId_idx" ON "AuditEvent"("runId");

-- CreateIndex
CREATE INDEX "SleepRun_scopeId_kind_startedAt_idx" ON "SleepRun"("scopeId", "kind", "startedAt");

-- CreateIndex
CREATE INDEX "Digest_status_idx" ON "Digest"("status");

-- CreateIndex
CREATE UNIQUE INDEX "Digest_scopeId_periodEnd_key" ON "Digest"("scopeId", "periodEnd");

-- CreateIndex
CREATE INDEX "Conversation_scopeId_status_lastActivityAt_idx" ON "Conversation"("scopeId", "status", "lastActivityAt");

-- CreateIndex
CREATE UNIQUE INDEX "Conversation_scopeId_id_key" ON "Conversation"("scopeId", "id");

-- Full-text search (prisma/sqlite/search-index.sql)
-- Full-text search for episodes and memories (SQLite FTS5), kept in sync by triggers in the same
-- transaction as the rows. Idempotent: the migration runner re-applies it after any migration
-- that rebuilds the Episode or Memory table (SQLite rebuilds drop a table's triggers).
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

CREATE TRIGGER IF NOT EXISTS "episode_search_insert" AFTER INSERT ON "Episode" BEGIN
    INSERT INTO "search_doc" ("kind", "ref_id", "scope_id") VALUES ('episode', NEW."id", NEW."scopeId");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_update" AFTER UPDATE OF "content" ON "Episode" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), NEW."content");
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
