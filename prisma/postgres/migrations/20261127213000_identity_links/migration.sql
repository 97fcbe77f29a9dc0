-- CreateTable
CREATE TABLE "IdentityLink" (
    "identityKey" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "fromScopeId" TEXT,
    "state" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "IdentityLink_pkey" PRIMARY KEY ("identityKey")
);

-- CreateTable
CREATE TABLE "LinkCode" (
    "codeHash" TEXT NOT NULL,
    "identityKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LinkCode_pkey" PRIMARY KEY ("codeHash")
);

-- CreateIndex
CREATE INDEX "IdentityLink_scopeId_idx" ON "IdentityLink"("scopeId");

-- CreateIndex
CREATE INDEX "IdentityLink_state_idx" ON "IdentityLink"("state");

-- CreateIndex
CREATE INDEX "LinkCode_identityKey_idx" ON "LinkCode"("identityKey");
