/**
 * The Telegram updates received (model TelegramUpdate), by the webhook or by long polling:
 * recorded before Telegram is answered or the update confirmed by the next getUpdates offset,
 * then handled once, whichever replica received them.
 *
 * - The primary key on `update_id` makes a second copy (Telegram's redelivery, a retry through
 *   another replica) a no-op: `record` answers `duplicate`.
 * - An update is `pending` until a replica starts it (`processing`, attempts + 1), then `done`
 *   (or `failed` after too many attempts). Who may start one is decided outside, by the chat's
 *   lease; this repository only keeps the rows.
 * - The Bot API calls an attempt made are kept with it (`calls`), so a later attempt after a
 *   crash replays them instead of sending them again.
 * - A finished update keeps only its id and status (the text it carried is removed), and is
 *   deleted after the redelivery window by `prune`.
 */
import type { PrismaClient } from './prisma';

/** One recorded Bot API call: its method and the result Telegram returned. */
export interface RecordedBotCall {
  readonly method: string;
  readonly result: unknown;
}

/** An update still to handle. */
export interface UnfinishedUpdate {
  readonly updateId: number;
  readonly chatKey: string;
  /** The update as received (JSON text). */
  readonly payload: string;
  readonly status: 'pending' | 'processing';
  readonly attempts: number;
  readonly calls: readonly RecordedBotCall[];
}

export interface TelegramUpdateRepository {
  /** Records a received update; `duplicate` when this update_id was recorded before. */
  record(update: { updateId: number; chatKey: string; payload: string }, now: Date): Promise<'recorded' | 'duplicate'>;
  /** The chat's oldest update not finished, or null. */
  nextUnfinished(chatKey: string): Promise<UnfinishedUpdate | null>;
  /** Marks an attempt started: `processing`, one more attempt. */
  startAttempt(updateId: number): Promise<void>;
  /** Replaces the calls recorded for an update (the attempt's calls so far). */
  saveCalls(updateId: number, calls: readonly RecordedBotCall[]): Promise<void>;
  /** Marks an update finished (`done`, or `failed` when given up), dropping its text and calls. */
  finish(updateId: number, status: 'done' | 'failed', now: Date): Promise<void>;
  /** Chats with unfinished updates (received at or before `receivedBefore`), oldest first. */
  chatsWithUnfinished(options: { receivedBefore: Date; limit: number }): Promise<string[]>;
  /** Deletes finished updates older than `before`; returns how many. */
  prune(before: Date): Promise<number>;
  /** How many updates have each status (tests, metrics). */
  counts(): Promise<Record<string, number>>;
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'P2002';
}

function parseCalls(text: string): RecordedBotCall[] {
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? (value as RecordedBotCall[]) : [];
  } catch {
    return [];
  }
}

export function createTelegramUpdateRepository(prisma: PrismaClient): TelegramUpdateRepository {
  return {
    async record(update, now) {
      try {
        await prisma.telegramUpdate.create({ data: { updateId: BigInt(update.updateId), chatKey: update.chatKey, payload: update.payload, receivedAt: now } });
        return 'recorded';
      } catch (error) {
        if (isUniqueViolation(error)) return 'duplicate';
        throw error;
      }
    },

    async nextUnfinished(chatKey) {
      const row = await prisma.telegramUpdate.findFirst({ where: { chatKey, status: { in: ['pending', 'processing'] } }, orderBy: { updateId: 'asc' } });
      if (!row) return null;
      return {
        updateId: Number(row.updateId),
        chatKey: row.chatKey,
        payload: row.payload,
        status: row.status as UnfinishedUpdate['status'],
        attempts: row.attempts,
        calls: parseCalls(row.calls),
      };
    },

    async startAttempt(updateId) {
      await prisma.telegramUpdate.update({ where: { updateId: BigInt(updateId) }, data: { status: 'processing', attempts: { increment: 1 } } });
    },

    async saveCalls(updateId, calls) {
      await prisma.telegramUpdate.update({ where: { updateId: BigInt(updateId) }, data: { calls: JSON.stringify(calls) } });
    },

    async finish(updateId, status, now) {
      await prisma.telegramUpdate.update({ where: { updateId: BigInt(updateId) }, data: { status, payload: '', calls: '[]', doneAt: now } });
    },

    async chatsWithUnfinished({ receivedBefore, limit }) {
      const rows = await prisma.telegramUpdate.findMany({
        where: { status: { in: ['pending', 'processing'] }, receivedAt: { lte: receivedBefore } },
        orderBy: { updateId: 'asc' },
        select: { chatKey: true },
        take: limit * 20,
      });
      return [...new Set(rows.map((r) => r.chatKey))].slice(0, limit);
    },

    async prune(before) {
      const deleted = await prisma.telegramUpdate.deleteMany({ where: { status: { in: ['done', 'failed'] }, doneAt: { lt: before } } });
      return deleted.count;
    },

    async counts() {
      const groups = await prisma.telegramUpdate.groupBy({ by: ['status'], _count: { _all: true } });
      return Object.fromEntries(groups.map((g) => [g.status, g._count._all]));
    },
  };
}
