/**
 * The Telegram channel: a grammY bot run by @grammyjs/runner (long polling, updates handled
 * concurrently), with, in this order:
 * 1. an update tracker, so `stop()` can wait for every update already taken in;
 * 2. an error boundary: a failing update is logged and the person told, never a crash;
 * 3. `sequentialize` by chat: one chat's updates in order, different chats in parallel;
 * 4. the access gate (allowlist, groups opt-in; attaches the chat's scope);
 * 5. the commands, then the conversation (every other message goes to the handler).
 * Every Bot API call goes through the retry transformer (429 retry_after, 5xx, network); every
 * successful getUpdates beats the polling heartbeat (poll-heartbeat.ts), when one is given.
 *
 * The service does not call `start()`: it runs the bot through telegram-polling.ts (each update
 * recorded before Telegram is told it arrived) or telegram-webhook.ts, both handing recorded
 * updates to `bot.handleUpdate`. `start()` polls straight from @grammyjs/runner, at most once (an
 * update is confirmed before it is handled); it serves tests of the middleware alone.
 *
 * Lifecycle: `start()` checks the token (getMe), removes any webhook, registers the command menu
 * and starts polling; `stop()` stops polling, waits for the updates in progress (their replies
 * are sent), then confirms the last update to Telegram so none is delivered again after a
 * restart. The token never appears in logs or errors (grammY keeps it out of its messages; the
 * logger redacts token-shaped strings as a second layer).
 */
import { run, sequentialize, type RunnerHandle } from '@grammyjs/runner';
import { Bot, Composer, GrammyError, type Api } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import type { CommandServices } from '../commands/command-scope';
import { createNumberedLists } from '../commands/numbered-lists';
import { commandFailureText } from '../commands/replies';
import type { ConversationHandler } from '../conversation-handler';
import { createAccessGate } from './access-gate';
import { createApiRetry, type ApiRetryOptions } from './api-retry';
import { registerConsolidationCommands } from './consolidation-commands';
import { registerConversation } from './conversation';
import { registerDigestCommand } from './digest-command';
import { registerEditedMessages } from './edited-message';
import { registerExportCommand } from './export-command';
import { registerMemoryPageCommands, type TelegramMemoryPage } from './memory-page';
import { registerFixCommands } from './fix-command';
import { registerForgetCommand } from './forget-command';
import { registerGroupCommands } from './group-commands';
import { BOT_COMMANDS, registerHelpCommands } from './help-commands';
import { registerKeepCommand } from './keep-command';
import { registerLinkCommands } from './link-command';
import type { LinkServices } from '../commands/link';
import type { TelegramMediaOptions } from './media/media-options';
import { registerMedia } from './media/register-media';
import { registerMemoriesCommand } from './memories-command';
import { registerRemindersCommand } from './reminders-command';
import type { PollHeartbeat } from './poll-heartbeat';
import { sendText } from './send-text';
import { registerSettingsCommand } from './settings-command';
import type { NocturneContext } from './telegram-context';
import { registerWhyCommand } from './why-command';

/** The Telegram settings (Config.telegram). */
export interface TelegramSettings {
  readonly token: string;
  readonly apiRoot: string;
  readonly allowedUsers: readonly number[];
  /** Serve group chats too (TELEGRAM_GROUPS); private chats only when false. */
  readonly groups: boolean;
}

/**
 * What the bot is built from: the conversation handler (the agent), the scope directory for the
 * access gate, and the domain services of the commands ({@link CommandServices}), each by name.
 */
export interface TelegramBotOptions extends CommandServices {
  readonly directory: Pick<ScopeDirectory, 'ensure' | 'setOwner' | 'setGroupReplies'>;
  readonly handler: ConversationHandler;
  readonly settings: TelegramSettings;
  readonly logger: Logger;
  /** Zone for dates of scopes without one (Config.timeZone). */
  readonly defaultTimeZone: string;
  /** The bot's own user, when known (skips getMe; tests). */
  readonly botInfo?: UserFromGetMe;
  /** Long-polling timeout of getUpdates, in seconds (default 30). */
  readonly pollTimeoutSeconds?: number;
  /** Updates handled at once across all chats (default 100). */
  readonly concurrency?: number;
  /** Retry rules of Bot API calls (tests shorten the delays). */
  readonly retry?: Omit<ApiRetryOptions, 'logger'>;
  /** How long `stop()` waits for updates in progress before abandoning them (default 4 s). */
  readonly stopTimeoutMs?: number;
  /** Beaten when start-up reaches the Bot API and after every successful getUpdates. */
  readonly heartbeat?: Pick<PollHeartbeat, 'beat'>;
  /** `/link` and `/unlink` (without them, the commands say linking is not available). */
  readonly link?: LinkServices;
  /** Reading photos, documents and voice (media/); without it media are noted by what they are. */
  readonly media?: TelegramMediaOptions;
  /** `/memory` and `/web` (memory-page.ts); without it they say the page is not served. */
  readonly memoryPage?: TelegramMemoryPage;
}

export interface TelegramBot {
  /** The grammY bot, for callers that add middleware or read `botInfo`. */
  readonly bot: Bot<NocturneContext>;
  /** The Bot API client (with retries), e.g. for the digest sender. */
  readonly api: Api;
  /** Checks the token, registers the commands and starts long polling from the runner (at most once; tests). */
  start(): Promise<void>;
  /** Stops polling and waits for updates in progress; safe to call twice. */
  stop(): Promise<void>;
  isRunning(): boolean;
}

/** A failure to reach Telegram at start, as an AppError saying what to do. */
export function toStartError(error: unknown): AppError {
  if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
    return new AppError('Telegram refused the bot token', {
      code: 'telegram.unauthorized',
      category: 'user',
      hint: 'Check TELEGRAM_BOT_TOKEN: copy it again from @BotFather (/token).',
      cause: error,
    });
  }
  if (error instanceof GrammyError && error.error_code === 409) {
    return new AppError('another process is already receiving this bot\u2019s updates', {
      code: 'telegram.conflict',
      category: 'user',
      hint: 'Stop the other instance (one bot token, one poller).',
      cause: error,
    });
  }
  return new AppError(`Telegram could not be reached: ${(error as Error).message}`, {
    code: 'telegram.unreachable',
    category: 'third_party',
    hint: 'Check the network and TELEGRAM_API_ROOT.',
    cause: error,
  });
}

/** How long stop waits for the runner to let go of its long poll. */
const STOP_POLL_MS = 2_000;
/** How long stop lets updates already taken in finish (the whole service stop is bounded at 10 s). */
const STOP_UPDATES_MS = 4_000;
/** How long stop waits for Telegram to take the confirmation of the last handled update. */
const STOP_CONFIRM_MS = 1_500;

/**
 * What every start of polling does first: warns when nobody may talk to the bot, checks the token
 * (getMe), drops a webhook left by another deployment and publishes the command list; a refusal
 * is a start error that says what to fix.
 */
export async function prepareToPoll(bot: Pick<Bot, 'init' | 'api'>, settings: Pick<TelegramSettings, 'allowedUsers'>, log: Logger): Promise<void> {
  if (settings.allowedUsers.length === 0) {
    log.warn('TELEGRAM_ALLOWED_USERS is empty: the bot refuses everyone. Message it once: the refusal tells you your user id to add.');
  }
  try {
    await bot.init();
    await bot.api.deleteWebhook();
    await bot.api.setMyCommands([...BOT_COMMANDS]);
  } catch (error) {
    throw toStartError(error);
  }
}

/** True when `work` settled within `ms` (its outcome is ignored), false when it was still pending. */
export function settleWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Builds the bot and its middleware; no network until `start()`. */
export function createTelegramBot(options: TelegramBotOptions): TelegramBot {
  const log = options.logger.child({ component: 'telegram' });
  const bot = new Bot<NocturneContext>(options.settings.token, { botInfo: options.botInfo, client: { apiRoot: options.settings.apiRoot } });
  bot.api.config.use(createApiRetry({ logger: options.logger, ...options.retry }));
  const { heartbeat } = options;
  if (heartbeat) {
    // Outside the retries: a beat only for a long poll that finally completed.
    bot.api.config.use(async (prev, method, payload, signal) => {
      const result = await prev(method, payload, signal);
      if (method === 'getUpdates' && result.ok) heartbeat.beat();
      return result;
    });
  }

  const inFlight = new Set<Promise<void>>();
  let highestUpdateId: number | undefined;
  let handle: RunnerHandle | undefined;
  let stopping: Promise<void> | undefined;

  // 1. Track every update from the moment the runner hands it over.
  bot.use((ctx, next) => {
    const id = ctx.update.update_id;
    if (highestUpdateId === undefined || id > highestUpdateId) highestUpdateId = id;
    const work = next();
    const done = work.then(
      () => void inFlight.delete(done),
      () => void inFlight.delete(done),
    );
    inFlight.add(done);
    return work;
  });

  // 2. One failing update never takes the bot down; the person hears about it.
  bot.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      log.error('an update could not be handled', { updateId: ctx.update.update_id, chatId: ctx.chat?.id, error });
      const text = commandFailureText(error);
      if (ctx.callbackQuery) await ctx.answerCallbackQuery({ text: text.slice(0, 200) }).catch(() => undefined);
      else if (ctx.chat) await sendText(ctx.api, ctx.chat.id, text).catch(() => undefined);
    }
  });

  // 3. One chat at a time, chats in parallel.
  bot.use(sequentialize((ctx: NocturneContext) => (ctx.chat ? String(ctx.chat.id) : undefined)));

  // 4. Allowlist, groups, scope.
  bot.use(
    createAccessGate({
      allowedUsers: options.settings.allowedUsers,
      groups: options.settings.groups,
      directory: options.directory,
      defaultTimeZone: options.defaultTimeZone,
      logger: options.logger,
    }),
  );

  // 5. Commands, then the conversation.
  const { catalog, digestBook, forget, archive, scheduler, digestSchedule, conflicts, handler, logger } = options;
  const lists = createNumberedLists();
  const routes = new Composer<NocturneContext>();
  registerHelpCommands(routes);
  registerMemoriesCommand(routes, { catalog, lists });
  registerForgetCommand(routes, { forget, digestBook, lists, catalog });
  registerWhyCommand(routes, { catalog, digestBook, lists });
  registerKeepCommand(routes, { conflicts, digestBook, lists });
  registerFixCommands(routes, { catalog, digestBook, lists, corrections: options.corrections });
  registerDigestCommand(routes, { digestBook, digestSchedule, logger });
  registerSettingsCommand(routes, { scopeControls: options.scopeControls });
  registerConsolidationCommands(routes, { scheduler, digestBook, lists });
  registerExportCommand(routes, { archive });
  registerRemindersCommand(routes, { reminders: options.reminders });
  registerGroupCommands(routes, { directory: options.directory });
  registerLinkCommands(routes, { link: options.link });
  registerMemoryPageCommands(routes, { page: options.memoryPage });
  registerEditedMessages(routes, { handler, logger });
  if (options.media) {
    const { token, apiRoot } = options.settings;
    registerMedia(routes, { media: options.media, handler, logger, files: { token, apiRoot } });
  }
  registerConversation(routes, { handler, logger });
  routes.on('callback_query:data', (ctx) => ctx.answerCallbackQuery({ text: 'This button no longer works.' }));
  bot.use(routes);

  bot.catch((error) => log.error('an update escaped the error boundary', { updateId: error.ctx.update.update_id, error: error.error }));

  return {
    bot,
    api: bot.api,

    async start() {
      if (handle) return;
      stopping = undefined;
      await prepareToPoll(bot, options.settings, log);
      // The Bot API answered: the heartbeat of a previous run is replaced before polling starts.
      heartbeat?.beat();
      handle = run(bot, {
        runner: {
          fetch: { timeout: options.pollTimeoutSeconds ?? 30, allowed_updates: ['message', 'edited_message', 'callback_query'] },
          // The retry transformer already logs failed calls (redacted); the runner would print them raw.
          silent: true,
        },
        sink: { concurrency: options.concurrency ?? 100 },
      });
      const task = handle.task();
      task?.catch((error: unknown) => log.error('the Telegram bot stopped receiving updates', { error: toStartError(error) }));
      log.info('Telegram bot started', { username: bot.botInfo.username, allowedUsers: options.settings.allowedUsers.length, groups: options.settings.groups });
    },

    stop() {
      stopping ??= (async () => {
        const running = handle;
        if (!running) return;
        // The runner aborts its long poll; a Bot API that takes the abort but never answers (or a
        // runner waiting out a retry) is not waited for past STOP_POLL_MS.
        const polled = await settleWithin(running.stop(), STOP_POLL_MS);
        if (!polled) log.warn('abandoned on stop: the pending getUpdates long poll (the Bot API did not let go)', { waitedMs: STOP_POLL_MS });
        // Updates already taken in are finished, replies included, for a while.
        const deadline = Date.now() + (options.stopTimeoutMs ?? STOP_UPDATES_MS);
        while ((inFlight.size > 0 || running.size() > 0) && Date.now() < deadline) {
          await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => setTimeout(r, 10))]);
        }
        const unfinished = inFlight.size + running.size();
        if (unfinished > 0) {
          // Not confirmed to Telegram: they come again after a restart rather than being lost.
          log.warn('abandoned on stop: updates still in progress (a model call, a reply or a Bot API call); Telegram will deliver them again', { unfinished });
        } else if (highestUpdateId !== undefined) {
          // Confirm what was handled, so Telegram does not hand it out again after a restart.
          await bot.api
            .getUpdates(
              { offset: highestUpdateId + 1, limit: 1, timeout: 0 },
              AbortSignal.timeout(STOP_CONFIRM_MS) as unknown as Parameters<typeof bot.api.getUpdates>[1],
            )
            .catch((error: unknown) => log.warn('abandoned on stop: confirming the last handled update; it may be delivered again after a restart', { error }));
        }
        handle = undefined;
        log.info('Telegram bot stopped');
      })();
      return stopping;
    },

    isRunning: () => handle?.isRunning() ?? false,
  };
}
