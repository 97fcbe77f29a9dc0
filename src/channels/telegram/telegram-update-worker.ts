/**
 * Handling the Telegram updates recorded in the database (by the webhook route, or by the polling
 * loop before it confirms them to Telegram), once each, across every replica sharing the
 * database, through the bot's middleware (`bot.handleUpdate`).
 *
 * The rules:
 * - A chat's updates are handled one at a time, in update_id order, by whichever replica holds the
 *   chat's lease (`telegram-chat:<chat>`). The holder drains the chat (oldest unfinished first),
 *   then lets go and looks once more, so an update recorded while it was letting go is not left.
 * - Each attempt is marked `processing` before it runs; the Bot API calls it makes that change
 *   something (a message sent, a button answered) are saved with the update as soon as Telegram
 *   confirms them. A later attempt (the holder died: its lease expired, or was taken over at once
 *   when the dead process was on this machine) is a resumption: those calls are replayed from the
 *   record instead of being made again, and the conversation handler answers with the reply it
 *   stored before, or a new one when none was stored ({@link ConversationHandler.replyAgain}).
 *   The one window left is a call Telegram performed whose confirmation the dead replica had not
 *   yet saved (milliseconds): that call is made again.
 * - An update that fails `maxAttempts` times is marked `failed` and logged, so one poisonous
 *   update cannot hold its chat forever.
 * - A sweep every `sweepMs` takes over chats whose updates wait (a replica died holding them);
 *   finished updates are deleted after a day (Telegram redelivers for at most that long).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../shared/logger';
import type { ConversationHandler } from '../conversation-handler';
import type { NocturneContext } from './telegram-context';

/** One Bot API call an attempt made, and what Telegram answered. */
export interface RecordedBotCall {
  readonly method: string;
  readonly result: unknown;
}

/** An update waiting to be handled (TelegramUpdateRepository in storage). */
export interface QueuedUpdate {
  readonly updateId: number;
  readonly payload: string;
  readonly status: 'pending' | 'processing';
  readonly attempts: number;
  readonly calls: readonly RecordedBotCall[];
}

/** Where received updates are kept: the port the storage repository implements. */
export interface UpdateStore {
  record(update: { updateId: number; chatKey: string; payload: string }, now: Date): Promise<'recorded' | 'duplicate'>;
  nextUnfinished(chatKey: string): Promise<QueuedUpdate | null>;
  startAttempt(updateId: number): Promise<void>;
  saveCalls(updateId: number, calls: readonly RecordedBotCall[]): Promise<void>;
  finish(updateId: number, status: 'done' | 'failed', now: Date): Promise<void>;
  chatsWithUnfinished(options: { receivedBefore: Date; limit: number }): Promise<string[]>;
  prune(before: Date): Promise<number>;
}

/** Named leases shared by the replicas (the sleep scheduler's leases, by the composition root). */
export interface ChatLeases {
  withLease<T>(name: string, fn: (lease: { lost(): boolean }) => Promise<T>): Promise<{ readonly acquired: boolean }>;
}

/** The attempt an async call chain belongs to (set around `bot.handleUpdate`). */
interface Attempt {
  readonly updateId: number;
  readonly resumed: boolean;
  readonly recorded: readonly RecordedBotCall[];
  cursor: number;
  readonly made: RecordedBotCall[];
}

/** Calls that only read or show "typing": made again freely, never recorded. */
const READ_ONLY = /^(get|sendChatAction$)/;

/** The chat an update belongs to, for ordering (`-` when it has none). */
export function chatKeyOf(update: Update): string {
  const chat =
    update.message?.chat ?? update.edited_message?.chat ?? update.callback_query?.message?.chat ?? update.my_chat_member?.chat ?? update.channel_post?.chat;
  if (chat) return String(chat.id);
  const from = update.callback_query?.from ?? update.inline_query?.from;
  return from ? `user:${from.id}` : '-';
}

/**
 * The update as it is recorded. A button press carries the whole message the button is on, whose
 * text may be what the press forgets (the /forget question quotes the memories): the record keeps
 * only what identifies that message (the handlers read the button's data, the chat and the
 * message id), so the text never reaches the table that /forget does not purge.
 */
export function recordedPayload(update: Update): string {
  const message = update.callback_query?.message;
  if (!update.callback_query || !message) return JSON.stringify(update);
  const { message_id, date, chat } = message;
  return JSON.stringify({ ...update, callback_query: { ...update.callback_query, message: { message_id, date, chat } } });
}

export interface UpdateWorkerOptions {
  readonly bot: Bot<NocturneContext>;
  readonly updates: UpdateStore;
  readonly leases: ChatLeases;
  readonly logger: Logger;
  /** Attempts per update before it is given up (default 5). */
  readonly maxAttempts?: number;
  /** How often waiting updates are looked for (default 2 s). */
  readonly sweepMs?: number;
  /** Updates younger than this are left to the replica that received them (default 1 s). */
  readonly sweepGraceMs?: number;
  readonly clock?: () => Date;
}

export interface UpdateWorker {
  /**
   * Starts handling the chat's waiting updates now, unless another replica is at it; tracked, so
   * `stop()` waits for it (a failure is logged and left to the sweep).
   */
  kick(chatKey: string): void;
  /** Starts the periodic sweep. */
  start(): void;
  /** Stops the sweep and waits for the updates in progress (bounded by the service's stop). */
  stop(): Promise<void>;
  /**
   * Wraps the conversation handler so that an update being resumed is answered with
   * {@link ConversationHandler.replyAgain}: give the bot the wrapped handler.
   */
  wrapHandler(handler: ConversationHandler): ConversationHandler;
}

/** The wrapper alone, before the bot exists: the worker is created with the bot built on it. */
export function createAttemptContext() {
  const storage = new AsyncLocalStorage<Attempt>();
  return {
    storage,
    wrapHandler(handler: ConversationHandler): ConversationHandler {
      return {
        ...handler,
        reply: (message) => (storage.getStore()?.resumed && handler.replyAgain ? handler.replyAgain(message) : handler.reply(message)),
      };
    },
  };
}

export type AttemptContext = ReturnType<typeof createAttemptContext>;

const DAY_MS = 24 * 60 * 60_000;

export function createUpdateWorker(options: UpdateWorkerOptions & { readonly context: AttemptContext }): UpdateWorker {
  const { bot, updates, leases, context } = options;
  const log = options.logger.child({ component: 'telegram-updates' });
  const clock = options.clock ?? (() => new Date());
  const maxAttempts = options.maxAttempts ?? 5;
  const sweepMs = options.sweepMs ?? 2_000;
  const graceMs = options.sweepGraceMs ?? 1_000;
  const inFlight = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let lastPrune = 0;

  // Every Bot API call made while an update is handled passes here: replayed from the record
  // when an earlier attempt made it, else made and recorded once Telegram confirms it.
  bot.api.config.use(async (prev, method, payload, signal) => {
    const attempt = context.storage.getStore();
    if (!attempt || READ_ONLY.test(method)) return prev(method, payload, signal);
    const earlier = attempt.recorded[attempt.cursor];
    if (earlier && earlier.method === method) {
      attempt.cursor++;
      attempt.made.push(earlier);
      log.info('a Bot API call an earlier attempt made is not made again', { updateId: attempt.updateId, method });
      return { ok: true, result: earlier.result } as Awaited<ReturnType<typeof prev>>;
    }
    attempt.cursor = attempt.recorded.length;
    const answer = await prev(method, payload, signal);
    if (answer.ok) {
      attempt.made.push({ method, result: answer.result });
      // Telegram carried the call out: a database that cannot take the record now (an outage
      // starting) must not turn a delivered reply into a failure and an apology. Unsaved, the
      // call is the documented window: a later attempt may make it again.
      await updates.saveCalls(attempt.updateId, attempt.made).catch((error: unknown) =>
        log.warn('a Bot API call Telegram carried out could not be recorded; a later attempt may make it again', {
          updateId: attempt.updateId,
          method,
          error,
        }),
      );
    }
    return answer;
  });

  async function handleOne(update: QueuedUpdate): Promise<void> {
    if (update.attempts >= maxAttempts) {
      log.error('an update failed too many times and is given up', { updateId: update.updateId, attempts: update.attempts });
      await updates.finish(update.updateId, 'failed', clock());
      return;
    }
    const resumed = update.status === 'processing';
    if (resumed)
      log.warn('taking over an update an earlier attempt did not finish (a replica stopped or died)', { updateId: update.updateId, attempts: update.attempts });
    await updates.startAttempt(update.updateId);
    const attempt: Attempt = { updateId: update.updateId, resumed, recorded: update.calls, cursor: 0, made: [] };
    await context.storage.run(attempt, () => bot.handleUpdate(JSON.parse(update.payload) as Update));
    await updates.finish(update.updateId, 'done', clock());
  }

  /** Handles the chat's updates while holding its lease; true when it got the lease. */
  async function drainHeld(chatKey: string): Promise<boolean> {
    const result = await leases.withLease(`telegram-chat:${chatKey}`, async (lease) => {
      for (;;) {
        // Stopping: what is left stays recorded for another replica (or the next start).
        if (lease.lost() || stopped) return;
        const next = await updates.nextUnfinished(chatKey);
        if (!next) return;
        await handleOne(next);
      }
    });
    return result.acquired;
  }

  async function drain(chatKey: string): Promise<void> {
    // After letting go, look again: an update recorded while the lease was being released found
    // it held and left it to us.
    for (let round = 0; round < 3; round++) {
      if (!(await drainHeld(chatKey))) return;
      if (!(await updates.nextUnfinished(chatKey))) return;
    }
  }

  function track(work: Promise<void>): void {
    const done = work
      .catch((error: unknown) => log.error('handling recorded Telegram updates failed; they are tried again', { error }))
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  }

  async function sweep(): Promise<void> {
    const now = clock();
    const chats = await updates.chatsWithUnfinished({ receivedBefore: new Date(now.getTime() - graceMs), limit: 50 });
    for (const chatKey of chats) if (!stopped) track(drain(chatKey));
    if (now.getTime() - lastPrune > 60 * 60_000) {
      lastPrune = now.getTime();
      await updates.prune(new Date(now.getTime() - DAY_MS));
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      const pass = sweep()
        .catch((error: unknown) => log.warn('the sweep for recorded Telegram updates failed; trying again', { error }))
        .finally(() => {
          inFlight.delete(pass);
          schedule();
        });
      inFlight.add(pass);
    }, sweepMs);
    timer.unref?.();
  }

  return {
    wrapHandler: context.wrapHandler,
    kick(chatKey) {
      if (!stopped) track(drain(chatKey));
    },
    start() {
      if (!stopped) return;
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
