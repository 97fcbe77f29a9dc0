-- CreateTable
CREATE TABLE "TelegramUpdate" (
    "updateId" BIGINT NOT NULL,
    "chatKey" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "calls" TEXT NOT NULL DEFAULT '[]',
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "doneAt" TIMESTAMP(3),

    CONSTRAINT "TelegramUpdate_pkey" PRIMARY KEY ("updateId")
);

-- CreateIndex
CREATE INDEX "TelegramUpdate_chatKey_status_updateId_idx" ON "TelegramUpdate"("chatKey", "status", "updateId");

-- CreateIndex
CREATE INDEX "TelegramUpdate_status_receivedAt_idx" ON "TelegramUpdate"("status", "receivedAt");
