-- CreateTable
CREATE TABLE "TelegramUpdate" (
    "updateId" BIGINT NOT NULL PRIMARY KEY,
    "chatKey" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "calls" TEXT NOT NULL DEFAULT '[]',
    "receivedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "doneAt" DATETIME
);

-- CreateIndex
CREATE INDEX "TelegramUpdate_chatKey_status_updateId_idx" ON "TelegramUpdate"("chatKey", "status", "updateId");

-- CreateIndex
CREATE INDEX "TelegramUpdate_status_receivedAt_idx" ON "TelegramUpdate"("status", "receivedAt");
