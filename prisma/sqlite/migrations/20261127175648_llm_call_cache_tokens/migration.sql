-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_LlmCall" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT,
    "purpose" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "inputTokens" INTEGER NOT NULL DEFAULT 0,
    "outputTokens" INTEGER NOT NULL DEFAULT 0,
    "cacheReadTokens" INTEGER NOT NULL DEFAULT 0,
    "cacheWriteTokens" INTEGER NOT NULL DEFAULT 0,
    "durationMs" INTEGER NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "runId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "LlmCall_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_LlmCall" ("createdAt", "durationMs", "error", "id", "inputTokens", "model", "outputTokens", "provider", "purpose", "runId", "scopeId", "status") SELECT "createdAt", "durationMs", "error", "id", "inputTokens", "model", "outputTokens", "provider", "purpose", "runId", "scopeId", "status" FROM "LlmCall";
DROP TABLE "LlmCall";
ALTER TABLE "new_LlmCall" RENAME TO "LlmCall";
CREATE INDEX "LlmCall_scopeId_createdAt_idx" ON "LlmCall"("scopeId", "createdAt");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
