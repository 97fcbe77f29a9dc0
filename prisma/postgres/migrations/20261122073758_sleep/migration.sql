-- AlterTable
ALTER TABLE "Episode" ADD COLUMN     "consolidationAttempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "importanceSource" TEXT NOT NULL DEFAULT 'heuristic';

-- AlterTable
ALTER TABLE "Memory" ADD COLUMN     "linkedAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "LlmCall" (
    "id" TEXT NOT NULL,
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
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LlmCall_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Lease" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Lease_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "Entity" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'person',
    "attributes" JSONB,
    "favorability" DOUBLE PRECISION NOT NULL DEFAULT 0.3,
    "interactionCount" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Entity_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EntityObservation" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "entityId" TEXT NOT NULL,
    "episodeId" TEXT,
    "content" TEXT NOT NULL,
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "EntityObservation_pkey" PRIMARY KEY ("id")
);

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

-- AddForeignKey
ALTER TABLE "LlmCall" ADD CONSTRAINT "LlmCall_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Entity" ADD CONSTRAINT "Entity_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EntityObservation" ADD CONSTRAINT "EntityObservation_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EntityObservation" ADD CONSTRAINT "EntityObservation_scopeId_entityId_fkey" FOREIGN KEY ("scopeId", "entityId") REFERENCES "Entity"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
