/**
 * Nightly digest delivery over Telegram. The sleep scheduler builds each scope's digest at the
 * owner's local digest time (src/sleep/scheduler.ts) and leaves it `pending`; the service calls
 * {@link DigestSender.wake} as soon as a digest tick built one, so it goes out within seconds of
 * being built, and this sender also looks for pending digests every `intervalMs` (retries, and
 * digests another process built). Each is sent to its scope's owner (for a private chat the
 * owner's user id is the chat id) and reported back with markSent / markFailed.
 *
 * A failed send is tried again on later passes until the digest has `maxAttempts` attempts
 * (then it stays `failed`, logged). No digest is sent twice: see digest-delivery.ts for the
 * claim-send-mark order and what a crash in the middle means (at most once).
 */
import type { Api } from 'grammy';
import { DIGEST_MAX_ATTEMPTS } from '../../memory/digests/digest';
import type { DigestBook } from '../../memory/digests/digest-book';
import type { Logger } from '../../shared/logger';
import type { DeliveryBook } from '../digest-delivery';
import { deliverDigest, type DeliveryOutcome } from './digest-delivery';
import { TELEGRAM_CHANNEL } from './telegram-scope';

export interface DigestSenderOptions {
  /** Where the digests wait, and where their delivery is claimed and marked. */
  readonly digestBook: DeliveryBook & Pick<DigestBook, 'pending' | 'interrupted'>;
  /** Anything with the Bot API: the TelegramBot handle or a grammY Bot. */
  readonly bot: { readonly api: Api };
  readonly logger: Logger;
  /** Time between passes (default one minute). */
  readonly intervalMs?: number;
  /** Attempts per digest before it is given up (default DIGEST_MAX_ATTEMPTS). */
  readonly maxAttempts?: number;
  readonly clock?: () => Date;
}

/** What one pass did, digest by digest. */
export interface DigestPassReport {
  readonly sent: number;
  readonly failed: number;
  readonly skipped: number;
}

export interface DigestSender {
  /** Logs and settles digests a crash left `sending`, then sends pending digests every interval. */
  start(): Promise<void>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
  /** One pass over the pending digests (what the timer calls). */
  sendPending(): Promise<DigestPassReport>;
  /**
   * A pass now, outside the timer (a digest was just built); never throws (a failure is logged)
   * and does nothing once stopped.
   */
  wake(): Promise<void>;
  /** Digests left `sending` by a crash: logged and marked sent, never resent. Returns how many. */
  recoverInterrupted(): Promise<number>;
}

/** Creates the sender; nothing runs until `start()`. */
export function createDigestSender(options: DigestSenderOptions): DigestSender {
  const { digestBook } = options;
  const log = options.logger.child({ component: 'telegram-digests' });
  const intervalMs = options.intervalMs ?? 60_000;
  const maxAttempts = options.maxAttempts ?? DIGEST_MAX_ATTEMPTS;
  const clock = options.clock ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = true;
  const woken = new Set<Promise<void>>();

  async function sendPending(): Promise<DigestPassReport> {
    const counts: Record<DeliveryOutcome, number> = { sent: 0, failed: 0, skipped: 0 };
    const digests = await digestBook.pending({ maxAttempts, channel: TELEGRAM_CHANNEL });
    for (const digest of digests) {
      if (digest.scope.channel !== TELEGRAM_CHANNEL || !digest.scope.ownerId) continue;
      const outcome = await deliverDigest({ digestBook, api: options.bot.api, digest, chatId: digest.scope.ownerId, logger: log, now: clock });
      counts[outcome]++;
      if (outcome === 'failed' && digest.attempts + 1 >= maxAttempts) {
        log.error('a digest could not be delivered and will not be tried again', {
          digestId: digest.id,
          scopeId: digest.scopeId,
          attempts: digest.attempts + 1,
        });
      }
    }
    if (counts.sent + counts.failed > 0) log.info('digest pass done', counts);
    return counts;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sendPending()
        .catch((error: unknown) => log.error('the digest pass failed; trying again at the next one', { error }))
        .finally(() => {
          running = undefined;
          schedule();
        });
    }, intervalMs);
    timer.unref?.();
  }

  async function recoverInterrupted(): Promise<number> {
    const stuck = await digestBook.interrupted(TELEGRAM_CHANNEL);
    for (const digest of stuck) {
      log.warn('a digest was being sent when the service stopped; it may or may not have arrived and is not sent again (at most once)', {
        digestId: digest.id,
        scopeId: digest.scopeId,
      });
      await digestBook.markSent(digest.id, clock());
    }
    return stuck.length;
  }

  return {
    sendPending,
    recoverInterrupted,

    async wake() {
      if (stopped) return;
      const pass = sendPending().then(
        () => undefined,
        (error: unknown) => log.error('the digest pass failed; trying again at the next one', { error }),
      );
      woken.add(pass);
      await pass.finally(() => woken.delete(pass));
    },

    async start() {
      if (!stopped) return;
      stopped = false;
      await recoverInterrupted();
      running = sendPending()
        .catch((error: unknown) => log.error('the digest pass failed; trying again at the next one', { error }))
        .finally(() => {
          running = undefined;
        });
      await running;
      schedule();
    },

    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running;
      await Promise.allSettled([...woken]);
    },
  };
}
