-- CreateTable
CREATE TABLE "WebSession" (
    "id" TEXT NOT NULL,
    "linkHash" TEXT NOT NULL,
    "sessionHash" TEXT,
    "scopeId" TEXT NOT NULL,
    "identityKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "redeemedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebSession_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "WebSession_linkHash_key" ON "WebSession"("linkHash");

-- CreateIndex
CREATE UNIQUE INDEX "WebSession_sessionHash_key" ON "WebSession"("sessionHash");

-- CreateIndex
CREATE INDEX "WebSession_scopeId_idx" ON "WebSession"("scopeId");

-- CreateIndex
CREATE INDEX "WebSession_expiresAt_idx" ON "WebSession"("expiresAt");
