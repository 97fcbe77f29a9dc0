-- CreateTable
CREATE TABLE "WebSession" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "linkHash" TEXT NOT NULL,
    "sessionHash" TEXT,
    "scopeId" TEXT NOT NULL,
    "identityKey" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "redeemedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE UNIQUE INDEX "WebSession_linkHash_key" ON "WebSession"("linkHash");

-- CreateIndex
CREATE UNIQUE INDEX "WebSession_sessionHash_key" ON "WebSession"("sessionHash");

-- CreateIndex
CREATE INDEX "WebSession_scopeId_idx" ON "WebSession"("scopeId");

-- CreateIndex
CREATE INDEX "WebSession_expiresAt_idx" ON "WebSession"("expiresAt");
