/**
 * The webhook channel: `POST /webhook/<source>` with a JSON body (webhook-request.ts), the
 * timestamp, method, path and body signed with the shared secret (signature.ts). A signature is
 * accepted once (the nonce store remembers it past the timestamp window), so a captured request
 * sent again, here or at another source's path, is refused. Answers:
 * - 200 `{ "reply": "..." }` — the agent's reply, or
 * - 202 `{ "accepted": true }` when the request names a `callbackUrl` the service may call
 *   (callback-target.ts: a host of WEBHOOK_CALLBACK_HOSTS, internal addresses refused): the reply
 *   is POSTed there, signed, with bounded retries, no redirect followed;
 * - 400 a path that is not valid percent-encoding, invalid JSON or fields (every problem listed),
 *   a `callbackUrl` the service may not call (nothing stored, nothing called),
 *   401 bad or missing signature or timestamp, a timestamp outside the window, a replay (the
 *   reason given), 404 unknown path, 405 other methods, 413 body over the limit, 415 not JSON,
 *   500 our failure (no details).
 * Nothing is stored unless the request is authentic and valid. Bound to 127.0.0.1 by default.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { checkCallbackUrl, postToCallback, type CallbackTarget } from './callback-target';
import { SIGNATURE_HEADER, SIGNATURE_WINDOW_MS, TIMESTAMP_HEADER, signRequest, verifyRequest } from './signature';
import { SOURCE_PATTERN, webhookRequestSchema, webhookScopeKey } from './webhook-request';
import type { EditOutcome } from '../../memory/episodes/episode-edits';
import { asSentence } from '../../shared/sentence';

export interface WebhookMessage {
  readonly scopeKey: string;
  readonly source: string;
  readonly user?: string;
  readonly name?: string;
  readonly text: string;
  readonly timestamp: Date;
  readonly externalId?: string;
}

/** Turns a message into the reply text (the agent loop, adapted by the composition root). */
export type WebhookHandler = (message: WebhookMessage) => Promise<string>;

/** Applies an edit (`edit: true`): the message stored under `externalId` gets the new text. */
export type WebhookEditHandler = (message: WebhookMessage & { readonly externalId: string }) => Promise<EditOutcome>;

/**
 * The signatures already accepted (storage: WebhookNonceRepository). `claim` records one and
 * answers false when it was there before.
 */
export interface WebhookNonceStore {
  claim(signature: string, now: Date, pruneBefore: Date): Promise<boolean>;
}

/** Another route of this listener (the Telegram webhook), matched by its exact path first. */
export interface ExtraRoute {
  readonly path: string;
  handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
}

export interface WebhookServerOptions {
  /** The webhook channel's secret; without it (only extra routes served) /webhook/<source> answers 404. */
  readonly secret?: string;
  /** Where accepted signatures are remembered, so a replay is refused. */
  readonly nonces?: WebhookNonceStore;
  readonly handler?: WebhookHandler;
  /** Applies edits; without it a request with `edit: true` is refused (404: edits are not kept here). */
  readonly editHandler?: WebhookEditHandler;
  /** Routes served beside the channel (TELEGRAM_MODE=webhook). */
  readonly routes?: readonly ExtraRoute[];
  readonly logger: Logger;
  readonly host?: string;
  readonly port?: number;
  /** Largest body accepted, in bytes (default 64 KiB). */
  readonly maxBytes?: number;
  /** Callback delivery: attempts and the first retry delay (doubled each time). */
  readonly callbackAttempts?: number;
  readonly callbackRetryMs?: number;
  /**
   * Hosts a `callbackUrl` may name (WEBHOOK_CALLBACK_HOSTS: names, IP addresses, `*.domain`);
   * empty or unset, a request with a callbackUrl is refused.
   */
  readonly callbackHosts?: readonly string[];
}

export interface WebhookServer {
  readonly url: string;
  stop(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function readBody(request: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      reject(new HttpError(413, `the body is larger than ${maxBytes} bytes`));
      request.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new HttpError(413, `the body is larger than ${maxBytes} bytes`));
        request.removeAllListeners('data');
        request.resume();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** How long one callback attempt may take. */
const CALLBACK_TIMEOUT_MS = 10_000;

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const log = options.logger.child({ component: 'webhook' });
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const attempts = options.callbackAttempts ?? 3;
  const retryMs = options.callbackRetryMs ?? 1_000;
  const callbackHosts = options.callbackHosts ?? [];
  const inFlight = new Set<Promise<unknown>>();

  async function deliver(secret: string, target: CallbackTarget, payload: Record<string, unknown>): Promise<void> {
    const body = JSON.stringify(payload);
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const headers = {
          'content-type': 'application/json',
          ...signRequest({ secret, method: 'POST', path: `${target.url.pathname}${target.url.search}`, body }),
        };
        const status = await postToCallback(target, headers, body, CALLBACK_TIMEOUT_MS);
        if (status >= 200 && status < 300) return;
        if (status < 500 && status !== 429) {
          log.warn('the callback refused the reply; not retried', { status, scopeKey: payload.scopeKey });
          return;
        }
        log.warn('the callback failed; will retry', { status, attempt });
      } catch (error) {
        log.warn('the callback could not be reached; will retry', { attempt, error });
      }
      if (attempt < attempts) await new Promise((r) => setTimeout(r, retryMs * 2 ** (attempt - 1)));
    }
    log.error('the reply could not be delivered to the callback', { scopeKey: payload.scopeKey, attempts });
  }

  /** An edit's answer: 200 `{ edited }` (false when the text was the same), 404 no such message, 409 forgotten. */
  async function applyEdit(message: WebhookMessage & { readonly externalId: string }): Promise<[number, Record<string, unknown>]> {
    if (!options.editHandler) throw new HttpError(404, 'edits are not accepted here');
    const outcome = await options.editHandler(message);
    switch (outcome.status) {
      case 'edited':
        return [200, { edited: true, memoriesToRecheck: outcome.memoriesToRecheck.length }];
      case 'unchanged':
        return [200, { edited: false, reason: 'the text is the same as the one stored' }];
      case 'forgotten':
        throw new HttpError(409, 'that message was forgotten at the owner\u2019s request; an edit does not bring it back');
      default:
        throw new HttpError(404, 'no message of this user with that messageId was stored; nothing was changed');
    }
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const route = options.routes?.find((r) => r.path === url.pathname);
    if (route) return route.handle(request, response);
    const match = /^\/webhook\/([^/]+)$/.exec(url.pathname);
    const { secret, nonces, handler } = options;
    if (!match || !secret || !nonces || !handler) throw new HttpError(404, 'not found: POST /webhook/<source>');
    if (request.method !== 'POST') throw new HttpError(405, 'use POST');
    let source: string;
    try {
      source = decodeURIComponent(match[1]!);
    } catch {
      throw new HttpError(400, 'the path is not valid percent-encoding (UTF-8): POST /webhook/<source>');
    }
    if (!SOURCE_PATTERN.test(source)) throw new HttpError(404, 'not found: the source is lower-case letters, digits, - and _');
    // The media type exactly (parameters may follow): `application/json-patch` is not JSON to us.
    if (!/^application\/json\s*(?:;|$)/i.test(String(request.headers['content-type'] ?? '')))
      throw new HttpError(415, 'send JSON (content-type: application/json)');
    const raw = await readBody(request, maxBytes);
    // Authenticity, freshness and first use before anything is parsed or stored.
    const header = (name: string) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(',') : value;
    };
    const checked = verifyRequest({
      secret,
      method: request.method ?? 'POST',
      path: request.url ?? '/',
      body: raw,
      signature: header(SIGNATURE_HEADER),
      timestamp: header(TIMESTAMP_HEADER),
    });
    if (!checked.ok) throw new HttpError(401, checked.reason);
    const now = new Date();
    if (!(await nonces.claim(checked.signature, now, new Date(now.getTime() - 2 * SIGNATURE_WINDOW_MS)))) {
      log.warn('a replayed webhook request was refused', { source });
      throw new HttpError(
        401,
        'this signature was already used: a signed request is accepted once (replay refused); sign every request, retries included, with a fresh timestamp',
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpError(400, 'the body is not valid JSON');
    }
    const parsed = webhookRequestSchema.safeParse(json);
    if (!parsed.success) {
      throw new HttpError(400, 'invalid request', { issues: parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(body)', problem: i.message })) });
    }
    const body = parsed.data;
    // Before anything is stored: a callback this service may not call refuses the whole request.
    let callback: CallbackTarget | undefined;
    if (body.callbackUrl) {
      const checked = await checkCallbackUrl(body.callbackUrl, callbackHosts);
      if (!checked.ok) {
        log.warn('a webhook callbackUrl was refused', { source, reason: checked.reason });
        throw new HttpError(400, checked.reason);
      }
      callback = checked.target;
    }
    const message: WebhookMessage = {
      scopeKey: webhookScopeKey(source, body.user),
      source,
      user: body.user,
      name: body.name,
      text: body.text,
      timestamp: body.timestamp ? new Date(body.timestamp) : new Date(),
      externalId: body.messageId,
    };
    if (body.edit) return send(response, ...(await applyEdit({ ...message, externalId: body.messageId! })));
    if (callback) {
      const target = callback;
      send(response, 202, { accepted: true });
      const job = handler(message)
        .then((reply) => deliver(secret, target, { scopeKey: message.scopeKey, messageId: message.externalId ?? null, reply }))
        .catch((error: unknown) => log.error('the webhook message could not be answered', { scopeKey: message.scopeKey, error }))
        .finally(() => inFlight.delete(job));
      inFlight.add(job);
      return;
    }
    send(response, 200, { reply: await handler(message) });
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (error instanceof HttpError) send(response, error.status, { error: asSentence(error.message), ...error.extra });
      else if (error instanceof AppError && error.category === 'user') send(response, 422, { error: asSentence(error.message), code: error.code });
      else {
        log.error('webhook request failed', { error });
        send(response, 500, { error: 'Internal error' });
      }
    });
  });
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  log.info('webhook channel listening', { url: `http://${address}:${port}/webhook/<source>` });
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await Promise.allSettled([...inFlight]);
    },
  };
}
