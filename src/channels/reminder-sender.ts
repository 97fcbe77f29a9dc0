/**
 * Sending reminders when they are due, on one channel, at most once each across restarts and
 * replicas: the digests' order (src/channels/digest-delivery.ts), claim, send, mark.
 *
 * 1. Claim: one conditional update moves the reminder from the status and attempt count read to
 *    `sending`; of two processes sharing the database exactly one's update changes the row.
 * 2. Send its text as it is now (read again after the claim: a forget may have removed it).
 *    A reminder claimed more than `lateAfterMs` after its time (the service was down, or every
 *    replica was) says "(late)" and when it was due: it is sent late rather than dropped.
 * 3. Mark it sent, or failed (tried again at the next pass, up to REMINDER_MAX_ATTEMPTS).
 *
 * A crash between 1 and 3 leaves it `sending`: at the next start it is logged and marked sent,
 * never resent (a duplicate would be worse than a gap, as for digests). A pass runs every
 * `intervalMs`, and once at start, so a reminder due while no process ran goes out at once.
 */
import { REMINDER_MAX_ATTEMPTS, type DueReminder, type ReminderBook } from '../memory/reminders/reminder-book';
import { localReminderTime } from '../memory/reminders/reminder-time';
import type { Logger } from '../shared/logger';

/** What a delivery of one reminder came to; `skipped`: someone else claimed it, or a forget removed it. */
export type ReminderOutcome = 'sent' | 'failed' | 'skipped';

/** The reminder book's verbs the sender uses. */
export type ReminderDeliveryBook = Pick<ReminderBook, 'due' | 'claim' | 'currentText' | 'markSent' | 'markFailed' | 'interrupted'>;

export interface ReminderSenderOptions {
  readonly reminders: ReminderDeliveryBook;
  /** The channel whose reminders this sender delivers (the one they were asked on). */
  readonly channel: string;
  /** Only this scope's reminders (the terminal serves one person); all of the channel's when absent. */
  readonly scopeKey?: string;
  /** Sends the text to the reminder's chat; throws when it could not. */
  readonly send: (reminder: DueReminder, text: string) => Promise<void>;
  readonly logger: Logger;
  /** Time between passes (REMINDER_CHECK_SECONDS). */
  readonly intervalMs: number;
  /** How long after its time a reminder counts as late (REMINDER_LATE_SECONDS). */
  readonly lateAfterMs: number;
  readonly clock?: () => Date;
}

export interface ReminderSender {
  /** Settles reminders a crash left `sending`, sends the ones due, then looks again every interval. */
  start(): Promise<void>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
  /** One pass over the due reminders (what the timer calls). */
  sendDue(): Promise<Record<ReminderOutcome, number>>;
}

/** The message a reminder becomes: its text, and when it was due if it is late. */
export function reminderMessage(text: string, late: boolean, dueAt: Date, timeZone: string): string {
  return late ? `⏰ Reminder (late): ${text}\n(It was due ${localReminderTime(dueAt, timeZone)}.)` : `⏰ Reminder: ${text}`;
}

/** Creates the sender; nothing runs until `start()`. */
export function createReminderSender(options: ReminderSenderOptions): ReminderSender {
  const { reminders, channel } = options;
  const log = options.logger.child({ component: 'reminders', channel });
  const clock = options.clock ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = true;

  async function deliver(reminder: DueReminder): Promise<ReminderOutcome> {
    const now = clock();
    const late = now.getTime() - reminder.dueAt.getTime() > options.lateAfterMs;
    if (!(await reminders.claim(reminder, late))) return 'skipped';
    // Re-read: a forget may have removed it between our read and the claim.
    const text = await reminders.currentText(reminder.id);
    if (text === null) return 'skipped';
    try {
      await options.send(reminder, reminderMessage(text, late, reminder.dueAt, reminder.timeZone));
    } catch (error) {
      await reminders.markFailed(reminder.id);
      const attempt = reminder.attempts + 1;
      const given = attempt >= REMINDER_MAX_ATTEMPTS;
      log[given ? 'error' : 'warn'](
        given ? 'a reminder could not be sent and will not be tried again' : 'a reminder could not be sent; it will be tried again',
        {
          reminderId: reminder.id,
          scopeId: reminder.scopeId,
          attempt,
          error,
        },
      );
      return 'failed';
    }
    await reminders.markSent(reminder.id, clock());
    log.info('reminder sent', { reminderId: reminder.id, scopeId: reminder.scopeId, late });
    return 'sent';
  }

  async function sendDue(): Promise<Record<ReminderOutcome, number>> {
    const counts: Record<ReminderOutcome, number> = { sent: 0, failed: 0, skipped: 0 };
    const due = await reminders.due({ channel, now: clock(), ...(options.scopeKey !== undefined && { scopeKey: options.scopeKey }) });
    for (const reminder of due) {
      if (stopped) break;
      counts[await deliver(reminder)]++;
    }
    return counts;
  }

  function pass(): Promise<unknown> {
    running = sendDue()
      .catch((error: unknown) => log.error('the reminder pass failed; trying again at the next one', { error }))
      .finally(() => {
        running = undefined;
        schedule();
      });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => void pass(), options.intervalMs);
    timer.unref?.();
  }

  return {
    sendDue,
    async start() {
      if (!stopped) return;
      stopped = false;
      for (const stuck of await reminders.interrupted(channel)) {
        log.warn('a reminder was being sent when the service stopped; it may or may not have arrived and is not sent again (at most once)', {
          reminderId: stuck.id,
          scopeId: stuck.scopeId,
        });
        await reminders.markSent(stuck.id, clock());
      }
      await pass();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
