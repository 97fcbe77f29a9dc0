/**
 * The running service: the core (storage, retrieval, sleep), the agent loop, and the channels
 * and servers the configuration asks for, started in dependency order and stopped in reverse.
 *
 * - the agent loop answers every channel through one {@link ConversationHandler};
 * - Telegram (and its nightly digest sender) when TELEGRAM_BOT_TOKEN is set: long polling, or
 *   with TELEGRAM_MODE=webhook a route on the webhook listener (several replicas can share it);
 * - the webhook listener when WEBHOOK_SECRET is set (the webhook channel) or Telegram is in
 *   webhook mode (its route); the admin API when ADMIN_TOKEN is set;
 * - the terminal conversation when TERMINAL=on, or TERMINAL=auto with no Telegram token and a
 *   terminal on stdin. Leaving it (/quit, Ctrl-D) stops the service.
 *
 * Stopping: intake first (terminal, Telegram finishing the updates it took, webhook, API), then
 * the agent's idle sweep and the digest sender, then the core. Nothing taken in is dropped.
 */
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { createAgent, type Agent } from './agent/agent';
import type { GroupMembership } from './memory/web/web-access';
import { webRouteServices } from './memory-page-services';
import { telegramGroupMembership } from './channels/telegram/memory-page';
import type { Config } from './config/load-config';
import type { ConversationHandler } from './channels/conversation-handler';
import { createFileHeartbeat, pollHealth } from './channels/telegram/poll-heartbeat';
import { createTerminalChannel, type TerminalChannelOptions } from './channels/terminal/terminal-channel';
import { webhookEdit, webhookInbound } from './channels/webhook/webhook-inbound';
import { startWebhookServer } from './channels/webhook/webhook-server';
import { createCore, type Core, type CoreOverrides } from './core';
import { agentServices, apiServices, channelServices } from './door-services';
import type { Logger } from './shared/logger';
import { registerSecrets, setLogPseudonymKey } from './shared/redact';
import { type StopList, stopAll } from './service-stop';

export { agentServices, apiServices, channelServices, mcpServices, mediaServices } from './door-services';
export { STOP_BUDGET_MS, STOP_WATCHDOG_MS } from './service-stop';

/**
 * Starts the Telegram digest sender (service-telegram.ts), loading Telegram's modules on the way:
 * a service without Telegram never loads them (docs/architecture.md, "Start-up").
 */
export async function startDigestSender(
  ...args: Parameters<typeof import('./service-telegram').startDigestSender>
): ReturnType<typeof import('./service-telegram').startDigestSender> {
  return (await import('./service-telegram')).startDigestSender(...args);
}

export interface ServiceIo {
  readonly input: Readable & { isTTY?: boolean };
  readonly output: Writable;
  /** Where the logs go, when not to stderr (said in the terminal's greeting). */
  readonly logFile?: string;
}

/** Which model answers, and how to change it: the first thing a newcomer needs to know. */
function modelBanner(config: Config, logFile: string | undefined): string {
  const { provider, model, ollamaHost } = config.llm;
  const how = provider === 'ollama' ? `Ollama at ${ollamaHost} (set ANTHROPIC_API_KEY to use Claude instead)` : 'Anthropic';
  return `Answering with ${model} through ${how}.${logFile ? ` Logs: ${logFile}.` : ''}`;
}

export interface RunningService {
  readonly core: Core;
  /**
   * The one agent loop behind every channel. Tests talk to it directly for scopes no channel of
   * their run serves (another terminal user, a webhook source) and read its replies' details.
   */
  readonly agent: Agent;
  /** What runs, for the start-up log line. */
  readonly parts: Readonly<Record<string, string>>;
  /** Resolves when the service ends by itself (the terminal conversation was left). */
  readonly ended: Promise<string>;
  stop(): Promise<void>;
}

/** Whether `npm start` opens the terminal conversation. */
export function wantsTerminal(config: Config, input: { isTTY?: boolean }): boolean {
  if (config.terminal.mode === 'on') return true;
  if (config.terminal.mode === 'off') return false;
  return !config.telegram && input.isTTY === true;
}

/**
 * The terminal conversation of `npm start` (the login user's scope), with its reminders; `ended`
 * resolves when the person leaves it (/quit, Ctrl-D), which stops the service.
 */
function startTerminal(
  config: Config,
  core: Core,
  doors: { io: ServiceIo; handler: ConversationHandler; logger: Logger; clock?: () => Date; web?: TerminalChannelOptions['web'] },
): { stop(): Promise<void>; ended: Promise<string> } {
  const { io, handler, logger, clock, web } = doors;
  const terminal = createTerminalChannel({
    ...channelServices(core),
    handler,
    input: io.input,
    output: io.output,
    scopeKey: `terminal:${config.terminal.user}`,
    authorName: config.terminal.user,
    logger,
    defaultTimeZone: config.timeZone,
    exportDir: path.join(config.dataDir, 'exports'),
    banner: modelBanner(config, io.logFile),
    ...(web && { web }),
    reminderDelivery: {
      reminders: core.reminders,
      intervalMs: config.reminders.checkMs,
      lateAfterMs: config.reminders.lateAfterMs,
      ...(clock && { clock }),
    },
  });
  return { stop: () => terminal.stop(), ended: terminal.run().then(() => 'the terminal conversation was left') };
}

/**
 * Starts everything the configuration asks for. `overrides` replace outside parts (the model, the
 * embedder, the vector index, the clock) so tests run this very wiring with loopback or deterministic doubles.
 */
export async function startService(config: Config, logger: Logger, io: ServiceIo, overrides: CoreOverrides = {}): Promise<RunningService> {
  // Every secret of the configuration is redacted wherever text leaves the process (main does it
  // too; a service started in-process must not depend on that).
  registerSecrets(config.secrets);
  // Under encryption at rest, logs name people and chats by keyed pseudonyms (docs/reliability.md).
  setLogPseudonymKey(config.database.provider === 'sqlite' ? config.database.encryptionKey : undefined);
  const log = logger.child({ component: 'service' });
  const stops: StopList = [];
  const parts: Record<string, string> = {};
  const core = await createCore(config, logger, overrides);
  stops.push(['core', () => core.close()]);
  let ended: Promise<string> = new Promise(() => undefined);
  const agent = createAgent({ ...agentServices(core), ...(overrides.clock && { options: { clock: overrides.clock } }) });
  // A merge of linked identities that a crash interrupted is completed before anyone talks.
  const resumed = await core.identities.resumeMerges({ now: new Date() });
  if (resumed > 0) log.info('completed merges of linked identities a crash interrupted', { count: resumed });

  try {
    core.embeddingWorker.start();
    if (config.sleep.enabled) core.scheduler.start();

    const handler: ConversationHandler = {
      reply: async (message) => (await agent.handle(message)).text,
      replyAgain: async (message) => (await agent.handle(message, { resume: true })).text,
      observe: (message) => agent.observe(message),
      edit: (edit) => core.edits.edit(edit),
      end: async (scopeKey) => {
        await agent.endConversation(scopeKey, 'explicit');
      },
    };
    const sweep = agent.startIdleSweep();
    stops.push(['idle sweep', () => sweep.stop()]);

    // Beaten by the polling bot, read by /readyz (the API starts first) and by the container health
    // check. A webhook replica polls nothing: Telegram posts to it, so it has no heartbeat.
    const telegram = config.telegram?.mode.kind === 'polling' ? config.telegram : undefined;
    const heartbeat = telegram && createFileHeartbeat({ file: telegram.heartbeat.file, logger });

    // The memory page asks Telegram whether a viewer belongs to a group; the bot is built below.
    let groupMembership: GroupMembership | undefined;
    // `/memory` and `/web` in the chats, when the page is served (on the admin API's listener).
    const webPage = config.adminToken
      ? { sessions: core.webSessions, publicUrl: config.web.publicUrl, https: config.web.https, webAppShortName: config.web.webAppShortName }
      : undefined;
    if (config.adminToken) {
      // The admin API's modules (fastify, the OpenAPI document, the routes) load only when it is served.
      const { createApiServer } = await import('./api/server');
      const api = await createApiServer({
        ...apiServices(core),
        token: config.adminToken,
        logger,
        web: webRouteServices(config, core, () => groupMembership),
        ...(telegram && heartbeat && { telegramPolling: () => pollHealth(heartbeat, telegram.heartbeat.maxAgeSeconds) }),
      });
      parts.api = await api.listen({ host: config.api.host, port: config.api.port });
      stops.push(['admin API', () => api.close()]);
    } else parts.api = 'off (set ADMIN_TOKEN)';

    // Telegram is built before the webhook listener starts: in webhook mode its route is served there.
    const telegramMode = config.telegram?.mode;
    // Telegram's modules (grammY and its runner, the media readers with the PDF library) load only
    // when a bot token is set.
    const telegramPart = config.telegram ? await import('./service-telegram') : undefined;
    const telegramDoor = telegramPart?.buildTelegram(config, core, { handler, heartbeat, logger, webPage });
    const telegramWebhook = telegramDoor?.webhook;

    const listen = config.webhook ?? (telegramMode?.kind === 'webhook' ? telegramMode : undefined);
    if (listen) {
      const webhook = await startWebhookServer({
        ...(config.webhook && {
          secret: config.webhook.secret,
          nonces: core.webhookNonces,
          callbackHosts: config.webhook.callbackHosts,
          handler: (message) => (handler.replyAgain ?? handler.reply)(webhookInbound(message)),
          editHandler: (message) => core.edits.edit(webhookEdit(message)),
        }),
        routes: telegramWebhook ? [telegramWebhook.route] : [],
        host: listen.host,
        port: listen.port,
        logger,
      });
      parts.webhook = config.webhook ? `${webhook.url}/webhook/<source>` : 'off (set WEBHOOK_SECRET)';
      if (telegramWebhook) parts.telegramWebhook = `${webhook.url}${telegramWebhook.route.path}`;
      stops.push(['webhook', () => webhook.stop()]);
    } else parts.webhook = 'off (set WEBHOOK_SECRET)';

    if (telegramPart && telegramDoor) {
      groupMembership = telegramGroupMembership(telegramDoor.bot.api);
      parts.telegram = await telegramPart.startTelegram(telegramDoor, config, core, { logger, webPage, clock: overrides.clock }, stops);
    } else parts.telegram = 'off (set TELEGRAM_BOT_TOKEN)';

    if (wantsTerminal(config, io.input)) {
      const terminal = startTerminal(config, core, { io, handler, logger, clock: overrides.clock, web: webPage });
      stops.push(['terminal', () => terminal.stop()]);
      parts.terminal = `terminal:${config.terminal.user}`;
      ended = terminal.ended;
    } else parts.terminal = 'off';
  } catch (error) {
    await stopAll(stops, log);
    throw error;
  }

  let stopping: Promise<void> | undefined;
  return {
    core,
    agent,
    parts,
    ended,
    stop: () => (stopping ??= stopAll(stops, log)),
  };
}
