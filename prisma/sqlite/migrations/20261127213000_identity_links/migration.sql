-- CreateTable
CREATE TABLE "IdentityLink" (
    "identityKey" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "fromScopeId" TEXT,
    "state" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "LinkCode" (
    "codeHash" TEXT NOT NULL PRIMARY KEY,
    "identityKey" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "IdentityLink_scopeId_idx" ON "IdentityLink"("scopeId");

-- CreateIndex
CREATE INDEX "IdentityLink_state_idx" ON "IdentityLink"("state");

-- CreateIndex
CREATE INDEX "LinkCode_identityKey_idx" ON "LinkCode"("identityKey");
