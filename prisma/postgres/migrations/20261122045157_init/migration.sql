-- CreateTable
CREATE TABLE "Scope" (
    "id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'user',
    "title" TEXT,
    "ownerId" TEXT,
    "timezone" TEXT,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "settings" JSONB,
    "lastMessageAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Scope_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Episode" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "author" TEXT,
    "content" TEXT NOT NULL,
    "summary" TEXT,
    "timestamp" TIMESTAMP(3) NOT NULL,
    "conversationId" TEXT,
    "externalId" TEXT,
    "metadata" JSONB,
    "importance" DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "consolidatedAt" TIMESTAMP(3),
    "contentHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Episode_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EpisodeTag" (
    "scopeId" TEXT NOT NULL,
    "episodeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "EpisodeTag_pkey" PRIMARY KEY ("episodeId","kind","value")
);

-- CreateTable
CREATE TABLE "Memory" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "category" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "confidence" DOUBLE PRECISION NOT NULL,
    "importance" DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "reinforcementCount" INTEGER NOT NULL DEFAULT 1,
    "lastReinforcedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sourceType" TEXT NOT NULL DEFAULT 'stated',
    "sourceTrust" DOUBLE PRECISION NOT NULL DEFAULT 1,
    "validFrom" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "validTo" TIMESTAMP(3),
    "supersededById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Memory_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "MemorySource" (
    "scopeId" TEXT NOT NULL,
    "memoryId" TEXT NOT NULL,
    "episodeId" TEXT NOT NULL,

    CONSTRAINT "MemorySource_pkey" PRIMARY KEY ("memoryId","episodeId")
);

-- CreateTable
CREATE TABLE "MemoryLink" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "fromId" TEXT NOT NULL,
    "toId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "score" DOUBLE PRECISION,
    "reason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "MemoryLink_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "runId" TEXT,
    "action" TEXT NOT NULL,
    "subjectType" TEXT NOT NULL,
    "subjectId" TEXT,
    "before" JSONB,
    "after" JSONB,
    "reason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SleepRun" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "episodeCount" INTEGER NOT NULL DEFAULT 0,
    "llmCalls" INTEGER NOT NULL DEFAULT 0,
    "inputTokens" INTEGER NOT NULL DEFAULT 0,
    "outputTokens" INTEGER NOT NULL DEFAULT 0,
    "stats" JSONB,
    "error" TEXT,

    CONSTRAINT "SleepRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Digest" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "periodStart" TIMESTAMP(3) NOT NULL,
    "periodEnd" TIMESTAMP(3) NOT NULL,
    "content" TEXT NOT NULL,
    "items" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "sentAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Digest_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Profile" (
    "scopeId" TEXT NOT NULL,
    "soul" TEXT NOT NULL,
    "data" JSONB,
    "version" INTEGER NOT NULL DEFAULT 1,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Profile_pkey" PRIMARY KEY ("scopeId")
);

-- CreateTable
CREATE TABLE "Conversation" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'open',
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastActivityAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "endedAt" TIMESTAMP(3),
    "endReason" TEXT,
    "summary" TEXT,
    "state" JSONB,

    CONSTRAINT "Conversation_pkey" PRIMARY KEY ("id")
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

-- AddForeignKey
ALTER TABLE "Episode" ADD CONSTRAINT "Episode_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EpisodeTag" ADD CONSTRAINT "EpisodeTag_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EpisodeTag" ADD CONSTRAINT "EpisodeTag_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Memory" ADD CONSTRAINT "Memory_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Memory" ADD CONSTRAINT "Memory_scopeId_supersededById_fkey" FOREIGN KEY ("scopeId", "supersededById") REFERENCES "Memory"("scopeId", "id") ON DELETE NO ACTION ON UPDATE NO ACTION;

-- AddForeignKey
ALTER TABLE "MemorySource" ADD CONSTRAINT "MemorySource_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MemorySource" ADD CONSTRAINT "MemorySource_scopeId_memoryId_fkey" FOREIGN KEY ("scopeId", "memoryId") REFERENCES "Memory"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MemorySource" ADD CONSTRAINT "MemorySource_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MemoryLink" ADD CONSTRAINT "MemoryLink_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MemoryLink" ADD CONSTRAINT "MemoryLink_scopeId_fromId_fkey" FOREIGN KEY ("scopeId", "fromId") REFERENCES "Memory"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "MemoryLink" ADD CONSTRAINT "MemoryLink_scopeId_toId_fkey" FOREIGN KEY ("scopeId", "toId") REFERENCES "Memory"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuditEvent" ADD CONSTRAINT "AuditEvent_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SleepRun" ADD CONSTRAINT "SleepRun_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Digest" ADD CONSTRAINT "Digest_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Profile" ADD CONSTRAINT "Profile_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Conversation" ADD CONSTRAINT "Conversation_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Full-text search (prisma/postgres/search-index.sql)
-- Full-text search for episodes and memories (PostgreSQL tsvector + GIN), kept in sync by a
-- trigger in the same transaction as the rows. Idempotent: the migration runner can re-apply it.
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
        VALUES (TG_ARGV[0], NEW."id", NEW."scopeId", to_tsvector('english', NEW."content"))
        ON CONFLICT ("kind", "ref_id") DO UPDATE SET "tsv" = EXCLUDED."tsv", "scope_id" = EXCLUDED."scope_id";
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER "episode_search_sync" AFTER INSERT OR UPDATE OF "content" OR DELETE ON "Episode"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('episode');
CREATE OR REPLACE TRIGGER "memory_search_sync" AFTER INSERT OR UPDATE OF "content" OR DELETE ON "Memory"
    FOR EACH ROW EXECUTE FUNCTION "nocturne_search_sync"('memory');
