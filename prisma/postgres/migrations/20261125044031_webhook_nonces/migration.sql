-- CreateTable
CREATE TABLE "WebhookNonce" (
    "signature" TEXT NOT NULL,
    "seenAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebhookNonce_pkey" PRIMARY KEY ("signature")
);

-- CreateIndex
CREATE INDEX "WebhookNonce_seenAt_idx" ON "WebhookNonce"("seenAt");
