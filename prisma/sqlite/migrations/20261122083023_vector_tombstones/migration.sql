-- CreateTable
CREATE TABLE "VectorTombstone" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "VectorTombstone_createdAt_idx" ON "VectorTombstone"("createdAt");
