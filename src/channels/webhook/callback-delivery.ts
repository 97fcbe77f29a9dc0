/**
 * Delivering a reply to the `callbackUrl` a request named: POSTed signed with the channel's secret,
 * retried with a doubling delay on a network failure, 429 or 5xx, given up at once on any other
 * refusal (retrying cannot fix it). Kept apart from the server because it runs after the answer
 * (202) was sent, on its own schedule; a reply that cannot be delivered is logged, never thrown.
 */
import type { Logger } from '../../shared/logger';
import { postToCallback, type CallbackTarget } from './callback-target';
import { signRequest } from './signature';

/** How long one callback attempt may take. */
const CALLBACK_TIMEOUT_MS = 10_000;

/** Posts `payload` to `target`, signed with `secret`; resolves when delivered or given up. */
export type CallbackDelivery = (secret: string, target: CallbackTarget, payload: Record<string, unknown>) => Promise<void>;

/** The delivery of one webhook listener, with its attempts and first retry delay. */
export function createCallbackDelivery(deps: {
  /** Attempts in all. */
  attempts: number;
  /** The delay before the first retry, doubled for each next one. */
  retryMs: number;
  log: Logger;
}): CallbackDelivery {
  const { attempts, retryMs, log } = deps;
  return async (secret, target, payload) => {
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
  };
}
