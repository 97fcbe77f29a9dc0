/**
 * Shared set-up of the Telegram integration tests: a real core on a fresh SQLite file (hash
 * embedder, sqlite-vec), the fake Bot API on loopback, and the real bot (grammY + runner) with
 * short polling and tiny retry delays.
 *
 * The conversation handler is a test double of the agent's port: it stores each message as an
 * episode through the core's episode service (attachments in its metadata) and answers
 * deterministically, recording the order in which each chat's messages reached it.
 */
import type { ConversationHandler } from '../../src/channels/conversation-handler';
import type { InboundMessage } from '../../src/agent/inbound-message';
import { createTelegramBot, type TelegramBot, type TelegramBotOptions } from '../../src/channels/telegram/telegram-bot';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { channelServices } from '../../src/service';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

export const ANA: FakeUser = { id: 1001, first_name: 'Ana', username: 'ana' };
export const BEN: FakeUser = { id: 1002, first_name: 'Ben' };
export const STRANGER: FakeUser = { id: 6666, first_name: 'Mallory', username: 'mallory' };

export interface RecordingHandler extends ConversationHandler {
  /** Every message received, in arrival order. */
  readonly seen: InboundMessage[];
  /** Messages stored without an answer (group talk not addressed to the bot), in arrival order. */
  readonly observed: InboundMessage[];
  readonly ended: string[];
  /** Answer text per input text (default: `you said: <text>`). */
  answer: (message: InboundMessage) => string | Promise<string>;
  /** Milliseconds to take before answering (for concurrency tests). */
  delayMs: (message: InboundMessage) => number;
  /** Store messages as episodes (off for the load tests). */
  store: boolean;
  /** Most replies in progress at once so far. */
  readonly maxConcurrent: number;
}

export function createRecordingHandler(core: Core): RecordingHandler {
  let active = 0;
  let maxConcurrent = 0;
  const handler: RecordingHandler = {
    get maxConcurrent() {
      return maxConcurrent;
    },
    seen: [],
    observed: [],
    ended: [],
    answer: (m) => `you said: ${m.text}`,
    delayMs: () => 0,
    store: true,
    async reply(message) {
      handler.seen.push(message);
      maxConcurrent = Math.max(maxConcurrent, ++active);
      try {
        const delay = handler.delayMs(message);
        if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      } finally {
        active--;
      }
      if (handler.store) {
        await core.episodeService.ingest(
          { key: message.scopeKey, channel: message.channel, kind: message.scopeKind },
          {
            content: message.text,
            author: message.authorName,
            externalId: message.externalId,
            timestamp: message.timestamp.toISOString(),
            metadata: (message.attachments?.length ?? 0) > 0 ? { attachments: message.attachments } : undefined,
          },
        );
      }
      return handler.answer(message);
    },
    async observe(message) {
      handler.observed.push(message);
      await core.episodeService.ingest(
        { key: message.scopeKey, channel: message.channel, kind: message.scopeKind },
        {
          content: message.text,
          author: message.authorName,
          externalId: message.externalId,
          timestamp: message.timestamp.toISOString(),
          metadata: { addressed: false },
        },
      );
    },
    async end(scopeKey) {
      handler.ended.push(scopeKey);
    },
  };
  return handler;
}

export interface Harness {
  readonly core: Core;
  readonly fake: FakeTelegramServer;
  readonly handler: RecordingHandler;
  bot: TelegramBot;
  readonly logLines: () => string[];
  /** A new bot on the same core, fake and handler (after a stop). */
  newBot(): TelegramBot;
  close(): Promise<void>;
}

export async function startHarness(
  options: {
    allowedUsers?: number[];
    groups?: boolean;
    bot?: Partial<TelegramBotOptions>;
    start?: boolean;
    clock?: () => Date;
    env?: Record<string, string>;
  } = {},
): Promise<Harness> {
  const fake = await startFakeTelegram();
  const { logger, lines } = memoryLogger();
  const config = loadConfig({ env: { DATA_DIR: tempDir('nocturne-tg-'), TZ: 'UTC', ...options.env }, envFile: false });
  const core = await createCore(config, logger, { embedder: createHashEmbedder({ dimension: 64 }), ...(options.clock && { clock: options.clock }) });
  const handler = createRecordingHandler(core);
  const newBot = () =>
    createTelegramBot({
      ...channelServices(core),
      handler,
      logger,
      defaultTimeZone: 'UTC',
      settings: { token: fake.token, apiRoot: fake.apiRoot, allowedUsers: options.allowedUsers ?? [ANA.id, BEN.id], groups: options.groups ?? false },
      pollTimeoutSeconds: 1,
      retry: { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 5 },
      ...options.bot,
    });
  const harness: Harness = {
    core,
    fake,
    handler,
    bot: newBot(),
    logLines: lines,
    newBot,
    async close() {
      await harness.bot.stop();
      await fake.close();
      await core.close();
    },
  };
  if (options.start !== false) await harness.bot.start();
  return harness;
}

/** The texts the bot has sent to a chat so far. */
export function textsIn(fake: FakeTelegramServer, chatId: number): string[] {
  return fake.sent(chatId).map((m) => m.text ?? m.caption ?? '');
}

/** Sends `text` as `from` and waits until the bot has sent `replies` more messages to that chat. */
export async function converse(fake: FakeTelegramServer, from: FakeUser, text: string, replies = 1): Promise<string[]> {
  const before = fake.sent(from.id).length;
  fake.message(from, text);
  await fake.waitFor(() => fake.sent(from.id).length >= before + replies, 5_000, `a reply to "${text}"`);
  return textsIn(fake, from.id).slice(before);
}
