/**
 * Telegram polling mode, at least once: each update Telegram hands out is recorded in the
 * database (the `TelegramUpdate` table webhook mode records into) before Telegram is told it
 * arrived, and handled from that record by the update worker (telegram-update-worker.ts), the
 * same middleware, once per update.
 *
 * Telegram counts an update as delivered when a later getUpdates asks for an offset past it. So
 * the loop is: getUpdates(offset) -> record every update of the batch -> only then move the
 * offset past the batch (the next long poll, which confirms it) -> hand the chats to the worker.
 * When the database cannot take a batch, the offset stays where it was: after a back-off the
 * same updates are asked for again, and Telegram keeps them until they are recorded. An update
 * recorded and then handed out again (the confirming poll never reached Telegram) is recognized
 * by its update_id and not handled twice.
 *
 * Stopping leaves what is unfinished in the table: the worker of the next start takes it over
 * (its sweep finds chats with waiting updates), resuming a half-handled update from its recorded
 * Bot API calls as webhook mode does.
 */
import type { Update } from 'grammy/types';
import type { Logger } from '../../shared/logger';
import { abortableSleep } from './api-retry';
import type { PollHeartbeat } from './poll-heartbeat';
import { prepareToPoll, settleWithin, toStartError, type TelegramBot, type TelegramSettings } from './telegram-bot';
import { chatKeyOf, createUpdateWorker, recordedPayload, type AttemptContext, type ChatLeases, type UpdateStore } from './telegram-update-worker';
import { ALLOWED_UPDATES } from './telegram-webhook';

export interface TelegramPollingOptions {
  /** The bot, built with `context.wrapHandler(handler)` as its conversation handler. */
  readonly telegram: TelegramBot;
  /** Who the bot serves (Config.telegram): named in the start-up log. */
  readonly settings: Pick<TelegramSettings, 'allowedUsers' | 'groups'>;
  readonly context: AttemptContext;
  readonly updates: UpdateStore;
  readonly leases: ChatLeases;
  readonly logger: Logger;
  /** Beaten when start-up reaches the Bot API (the bot beats after each getUpdates itself). */
  readonly heartbeat?: Pick<PollHeartbeat, 'beat'>;
  /** Long-polling timeout of getUpdates, in seconds (default 30). */
  readonly pollTimeoutSeconds?: number;
  /** First pause after a failed poll or record, doubled each time up to `maxBackoffMs` (default 250 ms). */
  readonly backoffMs?: number;
  /** Longest pause between two tries (default 5 s): how late recording resumes after an outage. */
  readonly maxBackoffMs?: number;
  /** Sweep period for recorded updates left waiting (default 2 s). */
  readonly sweepMs?: number;
  readonly clock?: () => Date;
}

export interface TelegramPolling {
  /** Checks the token, removes any webhook, registers the commands, starts polling and handling. */
  start(): Promise<void>;
  /** Stops polling and waits, for a while, for the updates in progress; safe to call twice. */
  stop(): Promise<void>;
}

/** How long stop waits for the pending long poll to let go (docs/channels.md and docs/reliability.md state both waits). */
export const STOP_POLL_MS = 2_000;
/** How long stop lets updates in progress finish (the whole service stop is bounded at 10 s). */
export const STOP_UPDATES_MS = 4_000;
/** Updates asked for per getUpdates (Telegram's maximum). */
const BATCH_LIMIT = 100;

/** Errors after which polling cannot go on: the token was revoked (401), another poller took over (409). */
function isFinal(error: unknown): boolean {
  const code = (error as { error_code?: unknown } | null)?.error_code;
  return code === 401 || code === 409;
}

export function createTelegramPolling(options: TelegramPollingOptions): TelegramPolling {
  const { telegram, updates } = options;
  const { bot } = telegram;
  const log = options.logger.child({ component: 'telegram' });
  const clock = options.clock ?? (() => new Date());
  const firstBackoff = options.backoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 5_000;
  const worker = createUpdateWorker({
    bot,
    updates,
    leases: options.leases,
    logger: options.logger,
    context: options.context,
    ...(options.sweepMs !== undefined && { sweepMs: options.sweepMs }),
    clock,
  });
  let controller: AbortController | undefined;
  let loop: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  /** Records the batch in order; throws when the database could not take one of them. */
  async function recordAll(batch: readonly Update[]): Promise<void> {
    for (const update of batch) {
      const record = { updateId: update.update_id, chatKey: chatKeyOf(update), payload: recordedPayload(update) };
      const outcome = await updates.record(record, clock());
      if (outcome === 'duplicate') log.info('an update was received again; it is handled once', { updateId: update.update_id });
    }
  }

  async function poll(signal: AbortSignal): Promise<void> {
    let offset = 0;
    let backoff = firstBackoff;
    let storeDown = false;
    const pause = async () => {
      await abortableSleep(backoff, signal).catch(() => undefined);
      backoff = Math.min(backoff * 2, maxBackoff);
    };
    while (!signal.aborted) {
      let batch: Update[];
      try {
        const params = { offset, limit: BATCH_LIMIT, timeout: options.pollTimeoutSeconds ?? 30, allowed_updates: [...ALLOWED_UPDATES] };
        batch = await bot.api.getUpdates(params, signal as unknown as Parameters<typeof bot.api.getUpdates>[1]);
      } catch (error) {
        if (signal.aborted) return;
        if (isFinal(error)) throw error;
        // The retry transformer already retried and logged this call; polling only slows down.
        await pause();
        continue;
      }
      try {
        await recordAll(batch);
      } catch (error) {
        // Not recorded, so not confirmed: the offset stays and Telegram hands these out again.
        if (!storeDown) {
          log.error('received Telegram updates could not be recorded; they stay with Telegram and are asked for again', { updates: batch.length, error });
        }
        storeDown = true;
        await pause();
        continue;
      }
      if (storeDown) log.info('received Telegram updates are recorded again', { updates: batch.length });
      storeDown = false;
      backoff = firstBackoff;
      const last = batch.at(-1);
      if (last) offset = last.update_id + 1;
      for (const chatKey of new Set(batch.map(chatKeyOf))) worker.kick(chatKey);
    }
  }

  return {
    async start() {
      if (loop) return;
      stopping = undefined;
      await prepareToPoll(bot, options.settings, log);
      // The Bot API answered: the heartbeat of a previous run is replaced before polling starts.
      options.heartbeat?.beat();
      // Updates a previous run recorded but did not finish are taken over by the sweep.
      worker.start();
      const running = new AbortController();
      controller = running;
      loop = poll(running.signal).catch((error: unknown) => {
        log.error('the Telegram bot stopped receiving updates', { error: toStartError(error) });
      });
      const { allowedUsers, groups } = options.settings;
      log.info('Telegram bot started', { username: bot.botInfo.username, allowedUsers: allowedUsers.length, groups });
    },

    stop() {
      stopping ??= (async () => {
        if (!loop) return;
        controller?.abort();
        if (!(await settleWithin(loop, STOP_POLL_MS))) {
          log.warn('abandoned on stop: the pending getUpdates long poll (the Bot API did not let go)', { waitedMs: STOP_POLL_MS });
        }
        if (!(await settleWithin(worker.stop(), STOP_UPDATES_MS))) {
          const what = 'updates still in progress (a model call, a reply or a Bot API call); they are recorded and handled after the restart';
          log.warn(`abandoned on stop: ${what}`, { waitedMs: STOP_UPDATES_MS });
        }
        loop = undefined;
        controller = undefined;
        log.info('Telegram bot stopped');
      })();
      return stopping;
    },
  };
}
