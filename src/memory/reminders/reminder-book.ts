/**
 * Reminders a person asked for ("remind me on Friday at 9 to call the dentist"): set, list,
 * cancel, and the rows of their delivery. Delivery follows the digests' rule (claim, send, mark;
 * src/channels/reminder-delivery.ts owns the order): a claim is one conditional update from the
 * status and attempt count read to `sending`, so of two senders (two replicas on one database,
 * or a timer and a restart) exactly one delivers a reminder. A reminder due while no process was
 * running is still `pending` when one starts again and goes out then, marked late.
 *
 * Every text returned passes the output filter ({@link showStored}).
 */
import type { PrismaClient, Reminder } from '../../storage/prisma';
import { ValidationError } from '../../shared/errors';
import { showStored } from '../output-filter';
import { scopeTimeZone } from '../scopes/scope-policy';

/** The status of a reminder while one process is delivering it. */
export const REMINDER_SENDING = 'sending';
/** Attempts at delivering one reminder before it is given up (a chat that blocked the bot). */
export const REMINDER_MAX_ATTEMPTS = 5;
/** Longest reminder text, in characters: a reminder is a line, not a document. */
export const REMINDER_MAX_CHARS = 500;
/** Reminders waiting per scope: past this, a new one is refused (a model looping on the tool). */
export const REMINDER_MAX_PENDING = 100;
/**
 * How far in the past a new reminder may be due: "now" said a few seconds ago is still now, and
 * goes out at the next pass; anything older is a mistake the person should hear about.
 */
export const REMINDER_PAST_TOLERANCE_MS = 60_000;

const WAITING = ['pending', 'failed'];

/** A reminder as a reader sees it (text through the output filter). */
export type ReminderView = Pick<Reminder, 'id' | 'scopeId' | 'text' | 'dueAt' | 'channel' | 'status' | 'attempts' | 'late' | 'sentAt'>;

/** A reminder due now, with what its delivery needs of its scope: where it goes, the zone it is read in. */
export interface DueReminder extends ReminderView {
  readonly scopeKey: string;
  readonly timeZone: string;
}

export interface ReminderBook {
  /** Stores a reminder due at `dueAt` (an instant), delivered on `channel`; refuses bad input. */
  set(input: { scopeId: string; text: string; dueAt: Date; channel: string; now: Date }): Promise<ReminderView>;
  /** The scope's reminders still to come (waiting or being sent), soonest first. */
  upcoming(scopeId: string): Promise<ReminderView[]>;
  /** Cancels a waiting reminder of the scope; null when there is none by that id (or it is already out). */
  cancel(scopeId: string, id: string): Promise<ReminderView | null>;
  /** Reminders due by `now` on `channel` (only those of `scopeKey`, when given), oldest first. */
  due(options: { channel: string; now: Date; scopeKey?: string; limit?: number }): Promise<DueReminder[]>;
  /** Moves the reminder from the status and attempt count read to `sending`; false when someone else did. */
  claim(reminder: Pick<ReminderView, 'id' | 'status' | 'attempts'>, late: boolean): Promise<boolean>;
  /** The reminder's text now (a forget may have removed it since it was read); null when gone. */
  currentText(id: string): Promise<string | null>;
  markSent(id: string, now: Date): Promise<void>;
  markFailed(id: string): Promise<void>;
  /** Reminders left `sending` on a channel by a process that stopped mid-delivery. */
  interrupted(channel: string): Promise<Array<{ id: string; scopeId: string }>>;
}

const VIEW = { id: true, scopeId: true, text: true, dueAt: true, channel: true, status: true, attempts: true, late: true, sentAt: true } as const;

const shown = <T extends { text: string }>(row: T): T => ({ ...row, text: showStored(row.text) });

/** `defaultTimeZone`: the zone (TZ) of scopes naming none. */
export function createReminderBook(prisma: PrismaClient, defaultTimeZone?: string): ReminderBook {
  return {
    async set({ scopeId, text, dueAt, channel, now }) {
      const clean = text.replace(/\s+/g, ' ').trim();
      if (clean === '') throw new ValidationError('a reminder needs something to remind of', { code: 'reminder.empty' });
      if (clean.length > REMINDER_MAX_CHARS) {
        throw new ValidationError(`a reminder is at most ${REMINDER_MAX_CHARS} characters`, { code: 'reminder.too_long' });
      }
      if (Number.isNaN(dueAt.getTime())) throw new ValidationError('the reminder has no valid time', { code: 'reminder.time_invalid' });
      if (dueAt.getTime() < now.getTime() - REMINDER_PAST_TOLERANCE_MS) {
        throw new ValidationError('that time has already passed; ask for a time still to come', { code: 'reminder.past' });
      }
      const waiting = await prisma.reminder.count({ where: { scopeId, status: { in: WAITING } } });
      if (waiting >= REMINDER_MAX_PENDING) {
        throw new ValidationError(`there are already ${waiting} reminders waiting; cancel some first`, { code: 'reminder.too_many' });
      }
      return shown(await prisma.reminder.create({ data: { scopeId, text: clean, dueAt, channel }, select: VIEW }));
    },

    async upcoming(scopeId) {
      const rows = await prisma.reminder.findMany({
        where: { scopeId, status: { in: [...WAITING, REMINDER_SENDING] }, attempts: { lt: REMINDER_MAX_ATTEMPTS } },
        orderBy: [{ dueAt: 'asc' }, { id: 'asc' }],
        select: VIEW,
      });
      return rows.map(shown);
    },

    async cancel(scopeId, id) {
      const cancelled = await prisma.reminder.updateMany({ where: { id, scopeId, status: { in: WAITING } }, data: { status: 'cancelled' } });
      if (cancelled.count === 0) return null;
      const row = await prisma.reminder.findUnique({ where: { id }, select: VIEW });
      return row && shown(row);
    },

    async due({ channel, now, scopeKey, limit }) {
      const rows = await prisma.reminder.findMany({
        where: {
          channel,
          status: { in: WAITING },
          attempts: { lt: REMINDER_MAX_ATTEMPTS },
          dueAt: { lte: now },
          ...(scopeKey !== undefined && { scope: { key: scopeKey } }),
        },
        orderBy: [{ dueAt: 'asc' }, { id: 'asc' }],
        take: limit ?? 100,
        select: { ...VIEW, scope: { select: { key: true, timezone: true } } },
      });
      return rows.map(({ scope, ...row }) => ({ ...shown(row), scopeKey: scope.key, timeZone: scopeTimeZone(scope, defaultTimeZone) }));
    },

    async claim(reminder, late) {
      const claimed = await prisma.reminder.updateMany({
        where: { id: reminder.id, status: reminder.status, attempts: reminder.attempts },
        data: { status: REMINDER_SENDING, late },
      });
      return claimed.count > 0;
    },

    async currentText(id) {
      const row = await prisma.reminder.findUnique({ where: { id }, select: { text: true } });
      return row ? showStored(row.text) : null;
    },

    async markSent(id, now) {
      await prisma.reminder.updateMany({ where: { id }, data: { status: 'sent', sentAt: now } });
    },

    async markFailed(id) {
      await prisma.reminder.updateMany({ where: { id, status: REMINDER_SENDING }, data: { status: 'failed', attempts: { increment: 1 } } });
    },

    interrupted: (channel) => prisma.reminder.findMany({ where: { status: REMINDER_SENDING, channel }, select: { id: true, scopeId: true } }),
  };
}

/**
 * The channels that deliver reminders (a sender runs for each): Telegram chats and the terminal.
 * The webhook channel answers one request at a time and has nowhere to send a message later.
 */
export const REMINDER_CHANNELS = ['telegram', 'terminal'] as const;
