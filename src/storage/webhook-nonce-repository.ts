/**
 * The signatures the webhook channel has accepted (model WebhookNonce), so that a request sent
 * again — to the same path or any other — is recognized as a replay. The primary key makes two
 * copies arriving at once race safely: one insert wins, the other is a replay.
 */
import type { PrismaClient } from './prisma';

export interface WebhookNonceRepository {
  /**
   * Records `signature` as seen at `now` and answers true, or answers false when it was seen
   * before (a replay). Rows seen before `pruneBefore` are deleted first (they can no longer
   * match a request whose timestamp is in the window).
   */
  claim(signature: string, now: Date, pruneBefore: Date): Promise<boolean>;
}

export function createWebhookNonceRepository(prisma: PrismaClient): WebhookNonceRepository {
  return {
    async claim(signature, now, pruneBefore) {
      await prisma.webhookNonce.deleteMany({ where: { seenAt: { lt: pruneBefore } } });
      try {
        await prisma.webhookNonce.create({ data: { signature, seenAt: now } });
        return true;
      } catch (error) {
        if ((error as { code?: string }).code === 'P2002') return false;
        throw error;
      }
    },
  };
}
