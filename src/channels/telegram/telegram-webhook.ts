/**
 * Telegram webhook mode: Telegram POSTs each update to TELEGRAM_WEBHOOK_URL (a load balancer in
 * front of any number of replicas sharing one database), instead of one process long polling.
 *
 * The route (served on the webhook listener, API_HOST:WEBHOOK_PORT, at the URL's path):
 * 1. checks `X-Telegram-Bot-Api-Secret-Token` against TELEGRAM_WEBHOOK_SECRET in constant time:
 *    401 when it is missing or wrong, before the body is read; nothing is stored;
 * 2. reads the update (at most 1 MiB of JSON with an integer `update_id`; else 400/413); an update
 *    nested deeper than any Telegram sends (garbled or hostile, yet carrying the secret) is
 *    acknowledged with 200 and dropped, logged without its content: storing it would overflow the
 *    stack, and any other answer makes Telegram deliver it again, forever;
 * 3. records it in the database (a second copy of an update_id is recognized there) and answers
 *    200 as soon as the record is committed; when the database cannot take it the answer is 500,
 *    and Telegram delivers the update again;
 * 4. hands the chat to the update worker (telegram-update-worker.ts), which runs the same bot
 *    middleware as polling mode, once per update, across replicas.
 *
 * Lifecycle: `start()` checks the token (getMe), registers the command menu and calls setWebhook
 * with the secret and the update types polling asks for; every replica does so (the same
 * settings: harmless). `stop()` finishes the updates in progress but does not delete the webhook:
 * the other replicas go on serving it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Update } from 'grammy/types';
import { MAX_JSON_DEPTH, pathDeeperThan } from '../../shared/json-depth';
import type { Logger } from '../../shared/logger';
import { BOT_COMMANDS } from './help-commands';
import { toStartError, type TelegramBot } from './telegram-bot';
import { chatKeyOf, createUpdateWorker, recordedPayload, type AttemptContext, type ChatLeases, type UpdateStore } from './telegram-update-worker';

/** The header Telegram puts the secret_token in. */
export const SECRET_HEADER = 'x-telegram-bot-api-secret-token';
/** The update types the bot asks for, in both modes (an edit replaces the stored text: edited-message.ts). */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'callback_query'] as const;
/** Largest update body taken (Telegram's are a few KiB). */
const MAX_BODY_BYTES = 1024 * 1024;

/** Whether the header carries the secret; compared in constant time (digests of equal length). */
export function secretMatches(header: string | string[] | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const given = createHash('sha256').update(header).digest();
  const expected = createHash('sha256').update(secret).digest();
  return timingSafeEqual(given, expected);
}

/** A route of the webhook listener: its path and what answers it. */
export interface HttpRoute {
  readonly path: string;
  handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
}

export interface TelegramWebhookOptions {
  /** The bot, built with `context.wrapHandler(handler)` as its conversation handler. */
  readonly telegram: TelegramBot;
  readonly context: AttemptContext;
  readonly settings: { readonly url: string; readonly path: string; readonly secret: string };
  readonly updates: UpdateStore;
  readonly leases: ChatLeases;
  readonly logger: Logger;
  /** Sweep period for updates a dead replica left (default 2 s). */
  readonly sweepMs?: number;
  readonly clock?: () => Date;
}

export interface TelegramWebhook {
  /** The route to serve (before `start()`: Telegram may post as soon as setWebhook returns). */
  readonly route: HttpRoute;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function answer(response: http.ServerResponse, status: number, error?: string): void {
  if (response.headersSent) return;
  const body = error === undefined ? '' : JSON.stringify({ error });
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

/** The body, or null when it exceeded `max` bytes (the rest is drained). */
function readBody(request: http.IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) over = true;
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(over ? null : Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** The update in the body, or a reason it is not one. */
function parseUpdate(raw: Buffer): Update | string {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return 'the body is not valid JSON';
  }
  const id = (json as { update_id?: unknown } | null)?.update_id;
  if (typeof json !== 'object' || json === null || Array.isArray(json) || typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
    return 'the body is not a Telegram update (an object with an integer update_id)';
  }
  return json as Update;
}

export function createTelegramWebhook(options: TelegramWebhookOptions): TelegramWebhook {
  const { telegram, settings, updates } = options;
  const log = options.logger.child({ component: 'telegram-webhook' });
  const clock = options.clock ?? (() => new Date());
  const worker = createUpdateWorker({
    bot: telegram.bot,
    updates,
    leases: options.leases,
    logger: options.logger,
    context: options.context,
    ...(options.sweepMs !== undefined && { sweepMs: options.sweepMs }),
    clock,
  });

  const route: HttpRoute = {
    path: settings.path,
    async handle(request, response) {
      if (request.method !== 'POST') {
        request.resume();
        return answer(response, 405, 'use POST');
      }
      if (!secretMatches(request.headers[SECRET_HEADER], settings.secret)) {
        request.resume();
        log.warn('a webhook request without the right secret token was refused', { hasToken: request.headers[SECRET_HEADER] !== undefined });
        return answer(response, 401, 'missing or wrong secret token');
      }
      const raw = await readBody(request, MAX_BODY_BYTES);
      if (raw === null) return answer(response, 413, `the body is larger than ${MAX_BODY_BYTES} bytes`);
      const update = parseUpdate(raw);
      if (typeof update === 'string') return answer(response, 400, update);
      if (pathDeeperThan(update, MAX_JSON_DEPTH) !== null) {
        log.warn('a webhook update nested too deep to be a Telegram update was acknowledged and dropped', {
          updateId: update.update_id,
          bytes: raw.length,
          maxDepth: MAX_JSON_DEPTH,
        });
        return answer(response, 200);
      }
      const chatKey = chatKeyOf(update);
      let outcome: 'recorded' | 'duplicate';
      try {
        outcome = await updates.record({ updateId: update.update_id, chatKey, payload: recordedPayload(update) }, clock());
      } catch (error) {
        // Not recorded: Telegram is told so and delivers it again.
        log.error('a webhook update could not be recorded; Telegram will deliver it again', { updateId: update.update_id, error });
        return answer(response, 500, 'internal error');
      }
      answer(response, 200);
      if (outcome === 'duplicate') log.info('a webhook update was received again; it is handled once', { updateId: update.update_id });
      worker.kick(chatKey);
    },
  };

  return {
    route,
    async start() {
      const { bot } = telegram;
      try {
        await bot.init();
        await bot.api.setMyCommands([...BOT_COMMANDS]);
        await bot.api.setWebhook(settings.url, { secret_token: settings.secret, allowed_updates: [...ALLOWED_UPDATES] });
      } catch (error) {
        throw toStartError(error);
      }
      worker.start();
      log.info('Telegram bot started (webhook)', { username: bot.botInfo.username, path: settings.path });
    },
    async stop() {
      await worker.stop();
      log.info('Telegram webhook stopped (the webhook stays set for the other replicas)');
    },
  };
}
