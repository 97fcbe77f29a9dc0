/**
 * The lifecycle of digests as the channels deliver them: build one now, find the ones waiting,
 * claim one for delivery (so no two senders, nor two processes, deliver it twice), read what is
 * left of it after a /forget, and mark it sent or failed. The rules of delivery (claim, send,
 * mark) live in the channels' `deliverDigestOnce`; this service owns the rows.
 *
 * Every text returned passes the output filter ({@link showStoredValue}).
 */
import type { Digest, PrismaClient, Scope } from '../../storage/prisma';
import { showStored, showStoredValue } from '../output-filter';
import { buildDigest, DIGEST_MAX_ATTEMPTS, markFailed, markSent, pendingDigests, readRunChanges, type DigestItem } from './digest';

/** The status a digest has while one process is delivering it. */
export const DIGEST_SENDING = 'sending';

/** The fields of a digest its delivery reads (its items: a channel may offer buttons for them). */
export type DeliverableDigest = Pick<Digest, 'id' | 'status' | 'attempts' | 'content' | 'scopeId' | 'items'>;

export interface DigestBook {
  /** Builds (or returns the stored) digest of the period ending at `periodEnd`. */
  build(scopeId: string, options: { periodEnd: Date; now: Date }): Promise<Digest>;
  /** The latest digest that reached the person (the one `/forget N` and `/why N` can refer to). */
  latestSent(scopeId: string): Promise<Digest | null>;
  /** The latest digest with something in it, sent or not (a scope read only through MCP has no channel sending it). */
  latest(scopeId: string): Promise<Digest | null>;
  /** A scope's digests built but not delivered yet (pending, or failed with attempts left), oldest first. */
  undelivered(scopeId: string): Promise<Digest[]>;
  /** Digests waiting on a channel, oldest period first, with their scope (owner and channel). */
  pending(options: { maxAttempts?: number; channel?: string; limit?: number }): Promise<Array<Digest & { scope: Scope }>>;
  /** Moves the digest from the status and attempt count read to `sending`; false when someone else did. */
  claim(digest: DeliverableDigest): Promise<boolean>;
  /** The digest's text now (a /forget may have rewritten it since it was read); null when gone. */
  currentContent(id: string): Promise<string | null>;
  markSent(id: string, now: Date): Promise<void>;
  markFailed(id: string): Promise<void>;
  /** Digests left `sending` on a channel by a process that stopped mid-delivery. */
  interrupted(channel: string): Promise<Array<{ id: string; scopeId: string }>>;
  /** What one sleep run learned, changed and let fade, as digest items (read from its audit events). */
  runChanges(scopeId: string, runId: string): Promise<{ items: DigestItem[]; reinforced: number }>;
}

/** `defaultTimeZone`: the zone (TZ) digests of scopes naming none are written in. */
export function createDigestBook(prisma: PrismaClient, defaultTimeZone?: string): DigestBook {
  return {
    build: async (scopeId, options) => showStoredValue(await buildDigest(prisma, scopeId, { ...options, defaultTimeZone })),
    latest: async (scopeId) => {
      const digest = await prisma.digest.findFirst({ where: { scopeId, status: { not: 'empty' } }, orderBy: { periodEnd: 'desc' } });
      return digest && showStoredValue(digest);
    },
    latestSent: async (scopeId) => {
      const digest = await prisma.digest.findFirst({ where: { scopeId, status: 'sent' }, orderBy: { periodEnd: 'desc' } });
      return digest && showStoredValue(digest);
    },
    undelivered: async (scopeId) => {
      const digests = await prisma.digest.findMany({
        where: { scopeId, status: { in: ['pending', 'failed'] }, attempts: { lt: DIGEST_MAX_ATTEMPTS } },
        orderBy: { periodEnd: 'asc' },
      });
      return digests.map(showStoredValue);
    },
    pending: async (options) => (await pendingDigests(prisma, options)).map(showStoredValue),
    async claim(digest) {
      const claimed = await prisma.digest.updateMany({
        where: { id: digest.id, status: digest.status, attempts: digest.attempts },
        data: { status: DIGEST_SENDING },
      });
      return claimed.count > 0;
    },
    async currentContent(id) {
      const row = await prisma.digest.findUnique({ where: { id }, select: { content: true } });
      return row ? showStored(row.content) : null;
    },
    markSent: (id, now) => markSent(prisma, id, now),
    markFailed: (id) => markFailed(prisma, id),
    interrupted: (channel) => prisma.digest.findMany({ where: { status: DIGEST_SENDING, scope: { channel } }, select: { id: true, scopeId: true } }),
    runChanges: async (scopeId, runId) => {
      const { items, reinforced } = await readRunChanges(prisma, scopeId, runId);
      return { items: items.map((item) => ({ ...item, text: showStored(item.text) })), reinforced };
    },
  };
}
