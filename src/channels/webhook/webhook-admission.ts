/**
 * Whether a request to `/webhook/<source>` is let in, decided before anything is parsed or stored:
 * the method, the path's source, the media type, the body's size, then authenticity (signature
 * and timestamp window), first use of the signature (a replay is refused), and only then the JSON,
 * its fields, and the `callbackUrl` the service would call. Each refusal is an {@link HttpError}
 * with the status and reason the caller gets. Kept apart from the server so the order of the
 * checks, which is what the channel's safety rests on, is read in one place.
 */
import type http from 'node:http';
import type { Logger } from '../../shared/logger';
import { checkCallbackUrl, type CallbackTarget } from './callback-target';
import { SIGNATURE_HEADER, SIGNATURE_WINDOW_MS, TIMESTAMP_HEADER, verifyRequest } from './signature';
import { HttpError, readBody } from './webhook-http';
import { SOURCE_PATTERN, type WebhookRequest, webhookRequestSchema } from './webhook-request';
import type { WebhookNonceStore } from './webhook-server';

/** A request let in: its source, its checked fields and, when it named one, the callback it may get. */
export interface AdmittedRequest {
  readonly source: string;
  readonly body: WebhookRequest;
  readonly callback?: CallbackTarget;
}

/** What the checks need: the channel's secret and nonces, and its limits. */
export interface Admission {
  readonly secret: string;
  readonly nonces: WebhookNonceStore;
  readonly maxBytes: number;
  readonly callbackHosts: readonly string[];
  readonly log: Logger;
}

/** Checks `request`, whose path named the source `encodedSource` (still percent-encoded); throws the refusal. */
export async function admitWebhookRequest(request: http.IncomingMessage, encodedSource: string, admission: Admission): Promise<AdmittedRequest> {
  const { secret, nonces, log } = admission;
  if (request.method !== 'POST') throw new HttpError(405, 'use POST');
  let source: string;
  try {
    source = decodeURIComponent(encodedSource);
  } catch {
    throw new HttpError(400, 'the path is not valid percent-encoding (UTF-8): POST /webhook/<source>');
  }
  if (!SOURCE_PATTERN.test(source)) throw new HttpError(404, 'not found: the source is lower-case letters, digits, - and _');
  // The media type exactly (parameters may follow): `application/json-patch` is not JSON to us.
  if (!/^application\/json\s*(?:;|$)/i.test(String(request.headers['content-type'] ?? '')))
    throw new HttpError(415, 'send JSON (content-type: application/json)');
  const raw = await readBody(request, admission.maxBytes);
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
  if (!body.callbackUrl) return { source, body };
  const callback = await checkCallbackUrl(body.callbackUrl, admission.callbackHosts);
  if (!callback.ok) {
    log.warn('a webhook callbackUrl was refused', { source, reason: callback.reason });
    throw new HttpError(400, callback.reason);
  }
  return { source, body, callback: callback.target };
}
