/**
 * Telegram in the running service: the bot, its intake (long polling, or with TELEGRAM_MODE=webhook
 * a route on the webhook listener), and its digest and reminder senders. Kept apart from
 * service.ts because Telegram starts in two steps around the webhook listener: it is built before
 * the listener starts (in webhook mode its route is served there) and started after it.
 *
 * In both modes an update is recorded in the database before Telegram counts it delivered, and
 * handled from that record once (telegram-update-worker.ts).
 */
import type { Api } from 'grammy';
import type { ConversationHandler } from './channels/conversation-handler';
import { createDigestSender } from './channels/telegram/digest-sender';
import { setMemoryMenuButton, type TelegramMemoryPage } from './channels/telegram/memory-page';
import type { PollHeartbeat } from './channels/telegram/poll-heartbeat';
import { createTelegramBot, type TelegramBot } from './channels/telegram/telegram-bot';
import { createTelegramPolling, type TelegramPolling } from './channels/telegram/telegram-polling';
import { createTelegramReminderSender } from './channels/telegram/telegram-reminders';
import { createAttemptContext } from './channels/telegram/telegram-update-worker';
import { createTelegramWebhook, type TelegramWebhook } from './channels/telegram/telegram-webhook';
import type { Config } from './config/load-config';
import type { Core } from './core';
import { channelServices, mediaServices } from './door-services';
import type { Logger } from './shared/logger';
import { createLeases } from './sleep/lease';
import type { StopList } from './service-stop';

/**
 * How long a replica's hold on a chat's recorded Telegram updates lasts without renewal: another machine's
 * replica takes the chat over this long after the holder died (one on the same machine at once).
 */
const TELEGRAM_CHAT_LEASE_MS = 30_000;

/** Telegram built and not started: the bot and its intake, one of the two. */
export interface TelegramDoor {
  readonly bot: TelegramBot;
  /** In webhook mode: the route the webhook listener serves. */
  readonly webhook?: TelegramWebhook;
  /** In polling mode. */
  readonly polling?: TelegramPolling;
}

/** Builds Telegram when TELEGRAM_BOT_TOKEN is set (nothing runs yet). */
export function buildTelegram(
  config: Config,
  core: Core,
  deps: { handler: ConversationHandler; heartbeat?: PollHeartbeat; logger: Logger; webPage?: TelegramMemoryPage },
): TelegramDoor | undefined {
  const { heartbeat, logger, webPage } = deps;
  const telegramMode = config.telegram?.mode;
  const attempts = config.telegram ? createAttemptContext() : undefined;
  const bot =
    config.telegram && attempts
      ? createTelegramBot({
          handler: attempts.wrapHandler(deps.handler),
          settings: config.telegram,
          heartbeat,
          logger,
          defaultTimeZone: config.timeZone,
          media: mediaServices(config, core, logger),
          ...(webPage && { memoryPage: webPage }),
          ...channelServices(core),
        })
      : undefined;
  const inbox = attempts && {
    context: attempts,
    updates: core.telegramUpdates,
    leases: createLeases({ prisma: core.db.prisma, ttlMs: TELEGRAM_CHAT_LEASE_MS, logger }),
    logger,
  };
  const webhook = bot && inbox && telegramMode?.kind === 'webhook' ? createTelegramWebhook({ telegram: bot, settings: telegramMode, ...inbox }) : undefined;
  const polling =
    bot && inbox && config.telegram && !webhook ? createTelegramPolling({ telegram: bot, settings: config.telegram, heartbeat, ...inbox }) : undefined;
  return bot && { bot, webhook, polling };
}

/**
 * Starts Telegram's intake, then its digest and reminder senders, adding their stops to `stops`
 * so that the senders stop after the intake; returns what runs, for the start-up log line.
 */
export async function startTelegram(
  door: TelegramDoor,
  config: Config,
  core: Core,
  deps: { logger: Logger; webPage?: TelegramMemoryPage; clock?: () => Date },
  stops: StopList,
): Promise<string> {
  const { bot, webhook, polling } = door;
  const { logger, webPage, clock } = deps;
  if (webhook) {
    await webhook.start();
    stops.push(['Telegram', () => webhook.stop()]);
  } else if (polling) {
    await polling.start();
    stops.push(['Telegram', () => polling.stop()]);
  }
  // Not awaited: a slow or refusing Bot API delays nothing (it is logged; /memory still works).
  void setMemoryMenuButton(bot.api, webPage, logger);
  const digests = await startDigestSender(core, bot, logger, clock ? { clock } : {});
  stops.splice(stops.length - 1, 0, ['digest sender', () => digests.stop()]);
  const reminders = createTelegramReminderSender({
    reminders: core.reminders,
    api: bot.api,
    logger,
    intervalMs: config.reminders.checkMs,
    lateAfterMs: config.reminders.lateAfterMs,
    ...(clock && { clock }),
  });
  await reminders.start();
  stops.splice(stops.length - 1, 0, ['reminder sender', () => reminders.stop()]);
  return `@${bot.bot.botInfo.username}${webhook ? ' (webhook)' : ''}`;
}

/**
 * Starts the Telegram digest sender and connects it to the sleep scheduler: a digest the
 * scheduler's tick builds is sent right after (not at the sender's next one-minute pass).
 * `stop()` disconnects it, then stops it.
 */
export async function startDigestSender(
  core: Core,
  bot: { readonly api: Api },
  logger: Logger,
  options: { intervalMs?: number; clock?: () => Date } = {},
): Promise<{ stop(): Promise<void> }> {
  const sender = createDigestSender({ digestBook: core.digestBook, bot, logger, ...options });
  await sender.start();
  const unsubscribe = core.scheduler.onDigestsBuilt(() => sender.wake());
  return {
    async stop() {
      unsubscribe();
      await sender.stop();
    },
  };
}
