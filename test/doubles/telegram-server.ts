/**
 * A fake Telegram Bot API on loopback, enough for a real grammY bot run by @grammyjs/runner:
 * `POST /bot<token>/<method>` with a JSON or multipart body, answered `{ok:true,result}` or
 * `{ok:false,error_code,description,parameters?}` the way Telegram does.
 *
 * - Incoming side: tests inject updates (a person's message, a photo, a button press); they
 *   queue until the bot's `getUpdates` takes them. `getUpdates` honours `offset` (updates below
 *   it are confirmed and dropped, as on Telegram), `limit`, and long polling: with no update it
 *   holds the request up to `timeout` seconds and answers as soon as one is injected; a request
 *   the client aborts is let go.
 * - Outgoing side: every call is recorded (method, payload, uploaded files); messages the bot
 *   sends are kept per chat, with edits applied, so a test reads the chat as a person would.
 * - Faults, per method and in order: 429 with `retry_after`, a 502 with a proxy's HTML body, or
 *   a dropped connection (the socket destroyed without an answer).
 *
 * - Webhook delivery: after `setWebhook` (its url, secret_token and allowed_updates are kept),
 *   injected updates are POSTed to the URL with the `X-Telegram-Bot-Api-Secret-Token` header
 *   instead of waiting for getUpdates (which then answers 409, as Telegram does); a delivery that
 *   is refused, fails or answers non-2xx is retried, like Telegram's. `routeWebhook(targets)`
 *   plays a load balancer: deliveries go round-robin to those addresses (a retry to the next).
 *
 * - Edits and forwards: `edit` injects an `edited_message` of a message the person sent,
 *   `forward` a message with `forward_origin`; a reply (`message(..., { replyTo })`) quotes the
 *   message answered as Telegram does (its text, the bot's or the person's).
 * - Files a person sends: `file(bytes)` keeps the bytes and gives the file_id to put in a photo,
 *   document or voice message; `getFile` answers its `file_path` (and size) and
 *   `GET /file/bot<token>/<file_path>` serves the bytes, as Telegram does (up to 20 MB there).
 *
 * Methods: getMe, getUpdates, setWebhook, deleteWebhook, getWebhookInfo, setMyCommands, sendMessage, sendChatAction,
 * sendDocument, editMessageText, editMessageReplyMarkup, answerCallbackQuery, leaveChat, getFile.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CallbackQuery, InlineKeyboardMarkup, Message, Update, UserFromGetMe } from 'grammy/types';

export type TelegramFault =
  /** 429 Too Many Requests with `parameters.retry_after` (seconds). */
  | { readonly kind: 'too-many-requests'; readonly retryAfter: number }
  /** HTTP 502 with an HTML body, as a reverse proxy in front of the Bot API answers. */
  | { readonly kind: 'bad-gateway' }
  /** The connection is destroyed before any answer. */
  | { readonly kind: 'drop' }
  /** An error answer with this code and description (upstream error text a test controls). */
  | { readonly kind: 'error'; readonly code: number; readonly description: string };

export interface FakeUser {
  readonly id: number;
  readonly first_name: string;
  readonly last_name?: string;
  readonly username?: string;
}

export interface FakeChat {
  readonly id: number;
  readonly type: 'private' | 'group' | 'supergroup';
  readonly title?: string;
}

export interface UploadedFile {
  readonly filename: string;
  readonly content: Buffer;
}

export interface RecordedCall {
  readonly method: string;
  readonly payload: Record<string, unknown>;
  readonly files: Readonly<Record<string, UploadedFile>>;
  /** The fault it was answered with, if any. */
  readonly fault?: TelegramFault['kind'];
  readonly at: number;
}

/** A message the bot sent, as the chat shows it now (edits applied). */
export interface SentMessage {
  readonly message_id: number;
  readonly chatId: number;
  text?: string;
  caption?: string;
  reply_markup?: InlineKeyboardMarkup;
  document?: UploadedFile;
  edits: number;
  readonly replyTo?: number;
}

export interface FakeTelegramServer {
  /** For `client.apiRoot`, e.g. `http://127.0.0.1:40123`. */
  readonly apiRoot: string;
  readonly token: string;
  readonly botInfo: UserFromGetMe;
  /** Queues an update (its update_id is assigned) and wakes a waiting getUpdates. */
  inject(update: Omit<Update, 'update_id'>): Update;
  /** A text message from `from` (commands get their bot_command entity). Private chat by default. */
  /** `replyTo`: a message id of the chat; when the bot sent it, the reply is to the bot's message. */
  message(from: FakeUser, text: string, options?: { chat?: FakeChat; replyTo?: number }): Update & { message: Message };
  /**
   * The person edits a message they sent earlier (an `edited_message` update: same message id and
   * chat, the new text, `edit_date` now). Private chat by default.
   */
  edit(from: FakeUser, messageId: number, text: string, options?: { chat?: FakeChat }): Update & { edited_message: Message };
  /** A message the person forwards: `forward_origin` names who wrote it first (a person, or a channel's title). */
  forward(from: FakeUser, text: string, origin: { user?: FakeUser; channel?: string }, options?: { chat?: FakeChat }): Update & { message: Message };
  /** Users that getChatMember reports as administrators of a chat (`chatId:userId`). */
  readonly admins: Set<string>;
  /** Users that getChatMember reports as having left a chat (`chatId:userId`); everyone else is a member. */
  readonly departed: Set<string>;
  /** A message with media fields (photo, voice, sticker, document...) and an optional caption. */
  media(from: FakeUser, fields: Partial<Message>, options?: { chat?: FakeChat }): Update & { message: Message };
  /**
   * Keeps `content` as a file a person sent and returns its ids and size, for a photo size, a
   * document or a voice message. `statedSize` is the size getFile and the message report (a lie
   * about it tests the download's own cap).
   */
  file(content: Buffer, options?: { statedSize?: number; name?: string }): { file_id: string; file_unique_id: string; file_size: number };
  /** Downloads served so far, by file_id. */
  downloads(): ReadonlyMap<string, number>;
  /** A press on an inline button of a message the bot sent. */
  press(from: FakeUser, message: SentMessage, data: string): Update & { callback_query: CallbackQuery };
  /** Recorded calls, all or of one method. */
  calls(method?: string): RecordedCall[];
  /** The bot's messages in a chat, in order. */
  sent(chatId: number): SentMessage[];
  /** Fails the next calls of `method` with these faults, in order. */
  fail(method: string, ...faults: TelegramFault[]): void;
  /**
   * From now on (until `hang(false)`) every call is taken and never answered, like a Bot API that
   * hangs; a long poll already held is not answered either. `hang(false)` ends it the way a
   * network that comes back does: the connections held meanwhile are reset, so clients retry.
   */
  hang(on?: boolean): void;
  /** Updates not yet confirmed by an offset. */
  unconfirmed(): number;
  /** How many times each update id was handed out by getUpdates. */
  deliveries(): ReadonlyMap<number, number>;
  /** The webhook as the last setWebhook left it (undefined once deleted, or never set). */
  webhook(): WebhookSetting | undefined;
  /** Deliver webhook updates round-robin to these addresses instead of the registered URL (a load balancer). */
  routeWebhook(targets: readonly string[]): void;
  /** Every webhook delivery attempt, in order: the update, where it went and the answer (0: no answer). */
  webhookDeliveries(): readonly WebhookDelivery[];
  /** Updates injected while a webhook is set and not yet answered 2xx. */
  undelivered(): number;
  /** Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
  waitFor<T>(probe: () => T | undefined | false, timeoutMs?: number, what?: string): Promise<T>;
  close(): Promise<void>;
}

/** What setWebhook registered. */
export interface WebhookSetting {
  readonly url: string;
  readonly secretToken?: string;
  readonly allowedUpdates?: readonly string[];
  readonly maxConnections: number;
}

export interface WebhookDelivery {
  readonly updateId: number;
  readonly target: string;
  /** The HTTP status, or 0 when the connection failed or timed out. */
  readonly status: number;
  readonly at: number;
}

const BOT_ID = 7_000_000_001;
/** Pause before a failed webhook delivery is tried again (Telegram waits longer; tests need speed). */
const WEBHOOK_RETRY_MS = 100;
/** How long a webhook delivery waits for the answer. */
const WEBHOOK_TIMEOUT_MS = 10_000;

interface Waiter {
  readonly limit: number;
  readonly respond: (updates: Update[]) => void;
  /** Resets the waiting request's connection. */
  readonly drop: () => void;
}

class ApiFailure extends Error {
  constructor(
    readonly code: number,
    readonly description: string,
  ) {
    super(description);
  }
}

function readBody(request: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** A multipart field value as grammY writes it: JSON for objects and numbers, raw text otherwise. */
function fieldValue(text: string): unknown {
  if (/^[[{]/.test(text) || /^-?\d+$/.test(text) || text === 'true' || text === 'false') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** Minimal multipart/form-data parsing (grammY's writer: `name="x"` and unquoted filenames). */
function parseMultipart(body: Buffer, boundary: string): { fields: Record<string, unknown>; files: Record<string, UploadedFile> } {
  const fields: Record<string, unknown> = {};
  const files: Record<string, UploadedFile> = {};
  const delimiter = Buffer.from(`--${boundary}`);
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    const next = body.indexOf(delimiter, start + delimiter.length);
    if (next === -1) break;
    let part = body.subarray(start + delimiter.length, next);
    if (part.subarray(0, 2).toString() === '\r\n') part = part.subarray(2);
    if (part.subarray(part.length - 2).toString() === '\r\n') part = part.subarray(0, part.length - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString('utf8');
      const content = part.subarray(headerEnd + 4);
      const name = /name="([^"]+)"/i.exec(headers)?.[1];
      const filename = /filename="?([^";\r\n]+)"?/i.exec(headers)?.[1];
      if (name && filename !== undefined) files[name] = { filename, content: Buffer.from(content) };
      else if (name) fields[name] = fieldValue(content.toString('utf8'));
    }
    start = next;
  }
  // `document: "attach://id"` points at the file part named `id`.
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === 'string' && value.startsWith('attach://')) {
      const file = files[value.slice('attach://'.length)];
      if (file) files[key] = file;
    }
  }
  return { fields, files };
}

function commandEntities(text: string): Message['entities'] {
  const match = /^\/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?/.exec(text);
  const entities: NonNullable<Message['entities']> = match ? [{ type: 'bot_command', offset: 0, length: match[0].length }] : [];
  // "@name" words, as Telegram marks them (not the one inside a command like /help@bot).
  for (const m of text.matchAll(/(^|[^\w/@])(@[A-Za-z0-9_]{3,})/g)) entities.push({ type: 'mention', offset: m.index + m[1]!.length, length: m[2]!.length });
  return entities.length > 0 ? entities : undefined;
}

export async function startFakeTelegram(options: { token?: string; username?: string; webhookRetryMs?: number } = {}): Promise<FakeTelegramServer> {
  const token = options.token ?? '123456789:AAFakeTokenForTestsOnly_abcdefghijklmn';
  const admins = new Set<string>();
  const departed = new Set<string>();
  const botInfo: UserFromGetMe = {
    id: BOT_ID,
    is_bot: true,
    first_name: 'Nocturne',
    username: options.username ?? 'nocturne_test_bot',
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
    has_topics_enabled: false,
    allows_users_to_create_topics: false,
  } as UserFromGetMe;
  let nextUpdateId = 1;
  let nextMessageId = 1;
  let confirmedBelow = 0;
  const queue: Update[] = [];
  const waiters = new Set<Waiter>();
  const recorded: RecordedCall[] = [];
  const chats = new Map<number, SentMessage[]>();
  const faults = new Map<string, TelegramFault[]>();
  /** Files people sent, by file_id: the bytes, the size reported, the path getFile gives. */
  const personFiles = new Map<string, { content: Buffer; size: number; path: string }>();
  const downloads = new Map<string, number>();
  let nextFile = 1;
  let hanging = false;
  /** Resets of the connections held unanswered while hanging. */
  const held = new Set<() => void>();
  const deliveries = new Map<number, number>();
  const now = () => Math.floor(Date.now() / 1000);
  let webhook: WebhookSetting | undefined;
  let webhookTargets: readonly string[] = [];
  let nextTarget = 0;
  const webhookQueue: Update[] = [];
  const webhookLog: WebhookDelivery[] = [];
  /** Updates being delivered (taken from webhookQueue, not yet answered 2xx). */
  const webhookStarted = new Set<number>();
  let closed = false;

  /** POSTs one update until a target answers 2xx (or the server closes / the webhook is removed). */
  async function deliverUntilAccepted(update: Update): Promise<void> {
    const body = JSON.stringify(update);
    while (!closed && webhook) {
      const target = webhookTargets.length > 0 ? webhookTargets[nextTarget++ % webhookTargets.length]! : webhook.url;
      let status = 0;
      try {
        const answer = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(webhook.secretToken ? { 'x-telegram-bot-api-secret-token': webhook.secretToken } : {}) },
          body,
          signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
        });
        status = answer.status;
        await answer.arrayBuffer().catch(() => undefined);
      } catch {
        status = 0;
      }
      webhookLog.push({ updateId: update.update_id, target, status, at: Date.now() });
      deliveries.set(update.update_id, (deliveries.get(update.update_id) ?? 0) + 1);
      if (status >= 200 && status < 300) return;
      await new Promise((r) => setTimeout(r, options.webhookRetryMs ?? WEBHOOK_RETRY_MS));
    }
  }

  /** Starts deliveries up to the webhook's max_connections. */
  function pumpWebhook(): void {
    while (webhook && !closed && webhookStarted.size < webhook.maxConnections && webhookQueue.length > 0) {
      const update = webhookQueue.shift()!;
      webhookStarted.add(update.update_id);
      void deliverUntilAccepted(update).finally(() => {
        webhookStarted.delete(update.update_id);
        pumpWebhook();
      });
    }
  }

  function available(limit: number): Update[] {
    return queue.filter((u) => u.update_id >= confirmedBelow).slice(0, limit);
  }

  function handOut(updates: Update[]): Update[] {
    for (const u of updates) deliveries.set(u.update_id, (deliveries.get(u.update_id) ?? 0) + 1);
    return updates;
  }

  function wake(): void {
    for (const waiter of [...waiters]) {
      const updates = available(waiter.limit);
      if (updates.length === 0) return;
      waiters.delete(waiter);
      waiter.respond(handOut(updates));
    }
  }

  function findSent(chatId: unknown, messageId: unknown): SentMessage {
    const message = chats.get(Number(chatId))?.find((m) => m.message_id === Number(messageId));
    if (!message) throw new ApiFailure(400, 'Bad Request: message to edit not found');
    return message;
  }

  function asMessage(sent: SentMessage): Message {
    const chat =
      sent.chatId > 0 ? { id: sent.chatId, type: 'private' as const, first_name: 'Someone' } : { id: sent.chatId, type: 'group' as const, title: 'A group' };
    return {
      message_id: sent.message_id,
      date: now(),
      chat,
      from: { id: BOT_ID, is_bot: true, first_name: botInfo.first_name, username: botInfo.username },
      ...(sent.text !== undefined ? { text: sent.text } : {}),
      ...(sent.caption !== undefined ? { caption: sent.caption } : {}),
      ...(sent.document
        ? {
            document: {
              file_id: `doc-${sent.message_id}`,
              file_unique_id: `u-${sent.message_id}`,
              file_name: sent.document.filename,
              file_size: sent.document.content.length,
            },
          }
        : {}),
      ...(sent.reply_markup ? { reply_markup: sent.reply_markup } : {}),
    } as Message;
  }

  function record(chatId: number, fields: Omit<SentMessage, 'message_id' | 'chatId' | 'edits'>): SentMessage {
    const sent: SentMessage = { message_id: nextMessageId++, chatId, edits: 0, ...fields };
    const list = chats.get(chatId) ?? [];
    list.push(sent);
    chats.set(chatId, list);
    return sent;
  }

  /** Answers a method; returns undefined when the answer comes later (a held getUpdates). */
  function call(
    method: string,
    p: Record<string, unknown>,
    files: Record<string, UploadedFile>,
    respond: (result: unknown) => void,
    onClose: (cb: () => void) => void,
    drop: () => void,
  ): unknown {
    switch (method) {
      case 'getMe':
        return botInfo;
      case 'setWebhook': {
        if (typeof p.url !== 'string' || !/^https?:\/\//.test(p.url))
          throw new ApiFailure(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
        if (p.secret_token !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(String(p.secret_token)))
          throw new ApiFailure(400, 'Bad Request: secret token contains unallowed characters');
        webhook = {
          url: p.url,
          ...(p.secret_token !== undefined ? { secretToken: String(p.secret_token) } : {}),
          ...(Array.isArray(p.allowed_updates) ? { allowedUpdates: p.allowed_updates as string[] } : {}),
          maxConnections: Number(p.max_connections ?? 40),
        };
        // Updates waiting for getUpdates now go to the webhook.
        webhookQueue.push(...queue.filter((u) => u.update_id >= confirmedBelow));
        queue.length = 0;
        pumpWebhook();
        return true;
      }
      case 'getWebhookInfo':
        return {
          url: webhook?.url ?? '',
          has_custom_certificate: false,
          pending_update_count: webhook ? webhookQueue.length + webhookStarted.size : queue.length,
          max_connections: webhook?.maxConnections,
          allowed_updates: webhook?.allowedUpdates,
        };
      case 'deleteWebhook':
        webhook = undefined;
        return true;
      case 'setMyCommands':
      case 'setChatMenuButton':
      case 'sendChatAction':
      case 'answerCallbackQuery':
      case 'leaveChat':
        return true;
      case 'getFile': {
        const stored = personFiles.get(String(p.file_id));
        if (!stored) throw new ApiFailure(400, 'Bad Request: invalid file_id');
        return { file_id: String(p.file_id), file_unique_id: `u-${String(p.file_id)}`, file_size: stored.size, file_path: stored.path };
      }
      case 'getChatMember': {
        const userId = Number(p.user_id);
        return {
          status: admins.has(`${String(p.chat_id)}:${userId}`) ? 'administrator' : departed.has(`${String(p.chat_id)}:${userId}`) ? 'left' : 'member',
          user: { id: userId, is_bot: false, first_name: 'Someone' },
        };
      }
      case 'getUpdates': {
        if (webhook) throw new ApiFailure(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
        const offset = Number(p.offset ?? 0);
        if (offset > confirmedBelow) confirmedBelow = offset;
        for (let i = queue.length - 1; i >= 0; i--) if (queue[i]!.update_id < confirmedBelow) queue.splice(i, 1);
        const limit = Math.min(100, Math.max(1, Number(p.limit ?? 100)));
        const ready = available(limit);
        const timeout = Number(p.timeout ?? 0);
        if (ready.length > 0 || timeout <= 0) return handOut(ready);
        const waiter: Waiter = {
          limit,
          drop,
          respond: (updates) => {
            clearTimeout(timer);
            respond(updates);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          respond([]);
        }, timeout * 1000);
        waiters.add(waiter);
        onClose(() => {
          clearTimeout(timer);
          waiters.delete(waiter);
        });
        return undefined;
      }
      case 'sendMessage': {
        if (typeof p.text !== 'string' || p.text.length === 0) throw new ApiFailure(400, 'Bad Request: message text is empty');
        if (p.text.length > 4096) throw new ApiFailure(400, 'Bad Request: message is too long');
        const replyTo = (p.reply_parameters as { message_id?: number } | undefined)?.message_id;
        return asMessage(
          record(Number(p.chat_id), { text: p.text, reply_markup: p.reply_markup as InlineKeyboardMarkup | undefined, ...(replyTo ? { replyTo } : {}) }),
        );
      }
      case 'sendDocument': {
        const document = files.document;
        if (!document) throw new ApiFailure(400, 'Bad Request: there is no document in the request');
        return asMessage(record(Number(p.chat_id), { document, caption: typeof p.caption === 'string' ? p.caption : undefined }));
      }
      case 'editMessageText': {
        const sent = findSent(p.chat_id, p.message_id);
        const markup = p.reply_markup as InlineKeyboardMarkup | undefined;
        if (sent.text === p.text && JSON.stringify(sent.reply_markup ?? null) === JSON.stringify(markup ?? null)) {
          throw new ApiFailure(
            400,
            'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
          );
        }
        if (typeof p.text !== 'string' || p.text.length > 4096) throw new ApiFailure(400, 'Bad Request: message is too long');
        sent.text = p.text;
        sent.reply_markup = markup;
        sent.edits++;
        return asMessage(sent);
      }
      case 'editMessageReplyMarkup': {
        const sent = findSent(p.chat_id, p.message_id);
        sent.reply_markup = p.reply_markup as InlineKeyboardMarkup | undefined;
        sent.edits++;
        return asMessage(sent);
      }
      default:
        throw new ApiFailure(404, 'Not Found: method not found');
    }
  }

  const server = http.createServer((request, response) => {
    void (async () => {
      const send = (status: number, body: unknown) => {
        if (response.headersSent || response.destroyed) return;
        const text = JSON.stringify(body);
        response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        response.end(text);
      };
      const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(request.url ?? '');
      if (download && request.method === 'GET') {
        await readBody(request);
        const entry = download[1] === token ? [...personFiles.entries()].find(([, f]) => f.path === download[2]) : undefined;
        if (!entry) return send(404, { ok: false, error_code: 404, description: 'Not Found' });
        downloads.set(entry[0], (downloads.get(entry[0]) ?? 0) + 1);
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': entry[1].content.length });
        response.end(entry[1].content);
        return;
      }
      const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(request.url ?? '');
      const raw = await readBody(request);
      if (!match) return send(404, { ok: false, error_code: 404, description: 'Not Found' });
      if (match[1] !== token) return send(401, { ok: false, error_code: 401, description: 'Unauthorized' });
      const method = match[2]!;
      const type = String(request.headers['content-type'] ?? '');
      let payload: Record<string, unknown> = {};
      let files: Record<string, UploadedFile> = {};
      const boundary = /boundary=([^;]+)/.exec(type)?.[1];
      if (type.startsWith('multipart/form-data') && boundary) ({ fields: payload, files } = parseMultipart(raw, boundary));
      else if (raw.length > 0) payload = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;

      if (hanging) {
        recorded.push({ method, payload, files, at: Date.now() });
        held.add(() => request.socket.destroy());
        return;
      }
      const fault = faults.get(method)?.shift();
      recorded.push({ method, payload, files, at: Date.now(), ...(fault ? { fault: fault.kind } : {}) });
      if (fault?.kind === 'drop') {
        request.socket.destroy();
        return;
      }
      if (fault?.kind === 'bad-gateway') {
        const html = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>';
        response.writeHead(502, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(html) });
        response.end(html);
        return;
      }
      if (fault?.kind === 'error') return send(fault.code, { ok: false, error_code: fault.code, description: fault.description });
      if (fault?.kind === 'too-many-requests') {
        return send(429, {
          ok: false,
          error_code: 429,
          description: `Too Many Requests: retry after ${fault.retryAfter}`,
          parameters: { retry_after: fault.retryAfter },
        });
      }
      try {
        const result = call(
          method,
          payload,
          files,
          (later) => send(200, { ok: true, result: later }),
          (cb) => response.on('close', cb),
          () => request.socket.destroy(),
        );
        if (result !== undefined) send(200, { ok: true, result });
      } catch (error) {
        if (error instanceof ApiFailure) send(error.code, { ok: false, error_code: error.code, description: error.description });
        else send(500, { ok: false, error_code: 500, description: `Internal Server Error: ${(error as Error).message}` });
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  function injectUpdate(update: Omit<Update, 'update_id'>): Update {
    const full = { update_id: nextUpdateId++, ...update } as Update;
    if (webhook) {
      webhookQueue.push(full);
      pumpWebhook();
      return full;
    }
    queue.push(full);
    wake();
    return full;
  }

  function privateChat(from: FakeUser): Message['chat'] {
    return { id: from.id, type: 'private', first_name: from.first_name, ...(from.username ? { username: from.username } : {}) };
  }

  function chatOf(from: FakeUser, chat?: FakeChat): Message['chat'] {
    if (!chat || chat.type === 'private') return privateChat(from);
    return { id: chat.id, type: chat.type, title: chat.title ?? `Group ${chat.id}` } as Message['chat'];
  }

  /** What the people wrote, by chat and message id (replies quote it, edits keep the message's date). */
  const written = new Map<number, Map<number, { text: string; date: number }>>();
  function remember(message: Message): void {
    const chat = written.get(message.chat.id) ?? new Map<number, { text: string; date: number }>();
    chat.set(message.message_id, { text: message.text ?? message.caption ?? '', date: message.date });
    written.set(message.chat.id, chat);
  }
  /** The text of message `id` of a chat as a reply quotes it: the bot's or the person's. */
  function quotedText(chatId: number, id: number): string {
    return chats.get(chatId)?.find((m) => m.message_id === id)?.text ?? written.get(chatId)?.get(id)?.text ?? 'earlier';
  }

  /** The author of message `id` of a chat: the bot when it sent it, else `fallback`. */
  function replyAuthor(chatId: number, id: number, fallback: FakeUser) {
    return (chats.get(chatId) ?? []).some((m) => m.message_id === id) ? botInfo : { ...fallback, is_bot: false };
  }

  return {
    admins,
    departed,
    apiRoot: `http://127.0.0.1:${port}`,
    token,
    botInfo,
    inject: injectUpdate,
    message(from, text, opts = {}) {
      const entities = commandEntities(text);
      const message = {
        message_id: nextMessageId++,
        date: now(),
        chat: chatOf(from, opts.chat),
        from: { ...from, is_bot: false },
        text,
        ...(entities ? { entities } : {}),
        ...(opts.replyTo
          ? {
              reply_to_message: {
                message_id: opts.replyTo,
                date: now(),
                chat: chatOf(from, opts.chat),
                text: quotedText(chatOf(from, opts.chat).id, opts.replyTo),
                from: replyAuthor(chatOf(from, opts.chat).id, opts.replyTo, from),
              },
            }
          : {}),
      } as Message;
      remember(message);
      return injectUpdate({ message } as Omit<Update, 'update_id'>) as Update & { message: Message };
    },
    edit(from, messageId, text, opts = {}) {
      const chat = chatOf(from, opts.chat);
      const before = written.get(chat.id)?.get(messageId);
      const entities = commandEntities(text);
      const edited_message = {
        message_id: messageId,
        date: before?.date ?? now(),
        edit_date: now(),
        chat,
        from: { ...from, is_bot: false },
        text,
        ...(entities ? { entities } : {}),
      } as Message;
      remember(edited_message);
      return injectUpdate({ edited_message } as Omit<Update, 'update_id'>) as Update & { edited_message: Message };
    },
    forward(from, text, origin, opts = {}) {
      const date = now();
      const forward_origin = origin.user
        ? { type: 'user', date: date - 3_600, sender_user: { ...origin.user, is_bot: false } }
        : { type: 'channel', date: date - 3_600, chat: { id: -1_009_999, type: 'channel', title: origin.channel ?? 'A channel' }, message_id: 77 };
      const message = { message_id: nextMessageId++, date, chat: chatOf(from, opts.chat), from: { ...from, is_bot: false }, text, forward_origin } as Message;
      remember(message);
      return injectUpdate({ message } as Omit<Update, 'update_id'>) as Update & { message: Message };
    },
    media(from, fields, opts = {}) {
      const message = { message_id: nextMessageId++, date: now(), chat: chatOf(from, opts.chat), from: { ...from, is_bot: false }, ...fields } as Message;
      return injectUpdate({ message } as Omit<Update, 'update_id'>) as Update & { message: Message };
    },
    file(content, opts = {}) {
      const id = `file-${nextFile++}`;
      const extension = /\.[A-Za-z0-9]+$/.exec(opts.name ?? '')?.[0] ?? '';
      const size = opts.statedSize ?? content.length;
      personFiles.set(id, { content, size, path: `documents/${id}${extension}` });
      return { file_id: id, file_unique_id: `u-${id}`, file_size: size };
    },
    downloads: () => downloads,
    press(from, sent, data) {
      const callback_query = {
        id: `cq-${nextUpdateId}`,
        from: { ...from, is_bot: false },
        chat_instance: `ci-${sent.chatId}`,
        message: asMessage(sent),
        data,
      } as CallbackQuery;
      return injectUpdate({ callback_query }) as Update & { callback_query: CallbackQuery };
    },
    calls: (method) => recorded.filter((c) => method === undefined || c.method === method),
    sent: (chatId) => chats.get(chatId) ?? [],
    hang(on = true) {
      hanging = on;
      if (on) {
        for (const waiter of [...waiters]) {
          waiters.delete(waiter);
          held.add(waiter.drop);
        }
      } else {
        for (const drop of held) drop();
        held.clear();
      }
    },
    fail(method, ...list) {
      faults.set(method, [...(faults.get(method) ?? []), ...list]);
    },
    unconfirmed: () => queue.filter((u) => u.update_id >= confirmedBelow).length,
    deliveries: () => deliveries,
    webhook: () => webhook,
    routeWebhook(targets) {
      webhookTargets = [...targets];
    },
    webhookDeliveries: () => webhookLog,
    undelivered: () => webhookQueue.length + webhookStarted.size,
    async waitFor(probe, timeoutMs = 5_000, what = 'the expected state') {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = probe();
        if (value !== undefined && value !== false) return value as never;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      closed = true;
      for (const waiter of [...waiters]) waiter.respond([]);
      waiters.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
