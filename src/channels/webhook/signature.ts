/**
 * Webhook authentication: an HMAC-SHA256 of the exact request body with the shared secret, sent
 * as `X-Nocturne-Signature: sha256=<hex>`, compared in constant time. Replies to a callback URL
 * are signed the same way so the receiver can check them.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-nocturne-signature';

export function sign(body: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** True when `header` is the signature of `body`; never throws, never short-circuits on content. */
export function verify(header: string | undefined, body: Buffer, secret: string): boolean {
  if (!header) return false;
  const expected = Buffer.from(sign(body, secret));
  const given = Buffer.from(header.trim());
  // timingSafeEqual needs equal lengths; compare against itself to spend the same time.
  if (given.length !== expected.length) {
    timingSafeEqual(expected, expected);
    return false;
  }
  return timingSafeEqual(given, expected);
}

/** What a sender signs: the request it is about to make. */
export interface SignedRequest {
  readonly secret: string;
  readonly method?: string;
  readonly path: string;
  readonly body: Buffer | string;
  /** Unix time in milliseconds; default now. */
  readonly timestamp?: number;
}

/** The headers that authenticate a request to the webhook channel. */
export function signRequest(request: SignedRequest): Record<string, string> {
  return { [SIGNATURE_HEADER]: sign(request.body, request.secret) };
}
