/**
 * Webhook authentication (docs/channels.md, "Webhook"). A sender signs
 *
 *     timestamp + "." + method + "." + path + "." + body
 *
 * with HMAC-SHA256 and the shared secret, and sends `X-Nocturne-Timestamp: <Unix time in
 * milliseconds>` and `X-Nocturne-Signature: sha256=<hex>`. The signature is compared in constant
 * time; a timestamp more than {@link SIGNATURE_WINDOW_MS} away from the receiver's clock is
 * refused, and the webhook server refuses a signature it has seen before (a replay), so one
 * signed request is acted on once, at the one path it was signed for. Replies to a callback URL
 * are signed the same way (method POST, the callback URL's path) so the receiver can check them
 * with {@link verifyRequest}.
 *
 * The body-only signature of earlier versions is refused, with a message naming this scheme.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-nocturne-signature';
export const TIMESTAMP_HEADER = 'x-nocturne-timestamp';
/** How far a request's timestamp may be from the receiver's clock, either way. */
export const SIGNATURE_WINDOW_MS = 5 * 60_000;

/** What is signed, as the scheme is described to senders. */
export const SIGNED_TEXT = 'timestamp.method.path.body (timestamp + "." + method + "." + path + "." + body)';

/** `sha256=<hex>`: the HMAC-SHA256 of `payload` with `secret`. */
export function sign(payload: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;
}

/** The bytes a signature covers: `timestamp.METHOD.path.body`. */
export function signedPayload(timestamp: string, method: string, path: string, body: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from(`${timestamp}.${method.toUpperCase()}.${path}.`, 'utf8'), Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')]);
}

/** What a sender signs: the request it is about to make. */
export interface SignedRequest {
  readonly secret: string;
  /** Default POST. */
  readonly method?: string;
  /** The request target as sent: `/webhook/crm` (with `?...` when there is a query string). */
  readonly path: string;
  /** The exact body bytes. */
  readonly body: Buffer | string;
  /** Unix time in milliseconds; default now (never the same twice in one process). */
  readonly timestamp?: number;
}

let lastTimestamp = 0;

/**
 * The headers that authenticate one request to the webhook channel (or one callback delivery).
 * Sign every request anew, retries included: a signature is accepted once.
 */
export function signRequest(request: SignedRequest): Record<string, string> {
  let timestamp = request.timestamp;
  if (timestamp === undefined) {
    // Two identical bodies to one path in the same millisecond would share a signature (and the
    // second would be refused as a replay): keep this process's timestamps distinct.
    timestamp = Math.max(Date.now(), lastTimestamp + 1);
    lastTimestamp = timestamp;
  }
  const stamp = String(Math.trunc(timestamp));
  return { [TIMESTAMP_HEADER]: stamp, [SIGNATURE_HEADER]: sign(signedPayload(stamp, request.method ?? 'POST', request.path, request.body), request.secret) };
}

/** The outcome of checking a request: its signature (the replay key) or why it is refused. */
export type Verification = { readonly ok: true; readonly signature: string; readonly timestamp: number } | { readonly ok: false; readonly reason: string };

export interface RequestToVerify {
  readonly secret: string;
  readonly method: string;
  readonly path: string;
  readonly body: Buffer;
  readonly signature: string | undefined;
  readonly timestamp: string | undefined;
  /** The receiver's clock, Unix milliseconds (default now). */
  readonly now?: number;
}

/** Constant-time equality of two signatures (never short-circuits on content). */
function same(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  // timingSafeEqual needs equal lengths; compare against itself to spend the same time.
  if (a.length !== b.length) {
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}

function minutes(ms: number): string {
  return `${(ms / 60_000).toFixed(1)} minutes`;
}

/** Checks a request's signature and timestamp; never throws. Replays are the caller's to refuse (the store knows them). */
export function verifyRequest(request: RequestToVerify): Verification {
  const how = `sign ${SIGNED_TEXT} with HMAC-SHA256 and the shared secret, send it as ${SIGNATURE_HEADER}: sha256=<hex> and the timestamp (Unix time in milliseconds) as ${TIMESTAMP_HEADER}; see docs/channels.md`;
  const given = request.signature?.trim();
  if (!given) return { ok: false, reason: `missing ${SIGNATURE_HEADER}: ${how}` };
  const stamp = request.timestamp?.trim();
  if (!stamp) {
    const bodyOnly = same(given, sign(request.body, request.secret));
    return {
      ok: false,
      reason: bodyOnly
        ? `the body-only signature is no longer accepted (it could be replayed): missing ${TIMESTAMP_HEADER}; ${how}`
        : `missing ${TIMESTAMP_HEADER}: ${how}`,
    };
  }
  if (!/^\d{1,16}$/.test(stamp)) return { ok: false, reason: `${TIMESTAMP_HEADER} must be Unix time in milliseconds (digits only): ${how}` };
  if (!same(given, sign(signedPayload(stamp, request.method, request.path, request.body), request.secret))) {
    return { ok: false, reason: `missing or wrong ${SIGNATURE_HEADER} (sha256=HMAC of ${SIGNED_TEXT}, for this very method and path, with the shared secret)` };
  }
  const timestamp = Number(stamp);
  const skew = (request.now ?? Date.now()) - timestamp;
  if (Math.abs(skew) > SIGNATURE_WINDOW_MS) {
    return {
      ok: false,
      reason: `${TIMESTAMP_HEADER} is ${minutes(Math.abs(skew))} ${skew > 0 ? 'old' : 'ahead of this server\u2019s clock'}: requests more than ${SIGNATURE_WINDOW_MS / 60_000} minutes old or ahead are refused (check the sender's clock, and sign every request, retries included, when it is sent)`,
    };
  }
  return { ok: true, signature: given.slice('sha256='.length), timestamp };
}
