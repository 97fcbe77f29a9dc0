/**
 * Working-memory upkeep (seed 003 "stale conversation cleanup"): a conversation left open with
 * no activity for a week is ended and its working state (recent turn ids, compaction
 * bookkeeping) dropped; its turns stay episodes and its running summary stays on the row.
 */
import type { PrismaClient } from '../storage/prisma';

export const STALE_CONVERSATION_DAYS = 7;

export async function endStaleConversations(prisma: PrismaClient, scopeId: string, now: Date, days = STALE_CONVERSATION_DAYS): Promise<number> {
  const { count } = await prisma.conversation.updateMany({
    where: { scopeId, status: 'open', lastActivityAt: { lt: new Date(now.getTime() - days * 86_400_000) } },
    data: { status: 'ended', endedAt: now, endReason: 'stale', state: undefined },
  });
  if (count > 0) {
    await prisma.conversation.updateMany({ where: { scopeId, status: 'ended', endReason: 'stale', endedAt: now }, data: { state: { pruned: true } } });
  }
  return count;
}
