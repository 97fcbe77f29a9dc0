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
 *
 * The parts: the checks a request passes before anything is stored (webhook-admission.ts), the
 * delivery to a callback (callback-delivery.ts), the plain HTTP (webhook-http.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { createCallbackDelivery } from './callback-delivery';
import { admitWebhookRequest } from './webhook-admission';
import { HttpError, send } from './webhook-http';
import { webhookScopeKey } from './webhook-request';
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

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const log = options.logger.child({ component: 'webhook' });
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const attempts = options.callbackAttempts ?? 3;
  const retryMs = options.callbackRetryMs ?? 1_000;
  const callbackHosts = options.callbackHosts ?? [];
  const inFlight = new Set<Promise<unknown>>();

  const deliver = createCallbackDelivery({ attempts, retryMs, log });

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
    const { source, body, callback } = await admitWebhookRequest(request, match[1]!, { secret, nonces, maxBytes, callbackHosts, log });
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
      send(response, 202, { accepted: true });
      const job = handler(message)
        .then((reply) => deliver(secret, callback, { scopeKey: message.scopeKey, messageId: message.externalId ?? null, reply }))
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
