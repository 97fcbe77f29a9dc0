-- CreateTable
CREATE TABLE "WebhookNonce" (
    "signature" TEXT NOT NULL PRIMARY KEY,
    "seenAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "WebhookNonce_seenAt_idx" ON "WebhookNonce"("seenAt");
