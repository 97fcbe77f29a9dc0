-- CreateTable
CREATE TABLE "VectorTombstone" (
    "id" TEXT NOT NULL,
    "scopeId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VectorTombstone_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "VectorTombstone_createdAt_idx" ON "VectorTombstone"("createdAt");
