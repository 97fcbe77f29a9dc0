/**
 * Retries of Bot API calls, as a grammY API transformer (`bot.api.config.use(...)`), so every
 * call (replies, edits, documents, digests) gets the same rules without a plugin.
 *
 * Which failures are retried is decided here, explicitly (the runner's rule):
 * - 429 Too Many Requests: wait `parameters.retry_after` seconds (Telegram's own figure), then
 *   retry; a wait longer than `maxRetryAfterSeconds` is not waited for: the error is returned.
 * - 5xx answers and network failures (a dropped connection, a proxy's HTML 502): back off
 *   exponentially from `baseDelayMs`, capped at `maxDelayMs`.
 * - Everything else (400 bad request, 401 bad token, 403 blocked by the user, 409 conflict) is
 *   final: retrying cannot help.
 * Attempts are bounded (`maxAttempts`, the first call included). A call whose abort signal fired
 * (the runner stopping its long poll) is never retried.
 *
 * A network failure after Telegram accepted a message cannot be told apart from one before it,
 * so a retried `sendMessage` may, rarely, deliver twice; losing replies would be worse.
 */
import type { Transformer } from 'grammy';
import type { Logger } from '../../shared/logger';

export interface ApiRetryOptions {
  readonly logger: Logger;
  /** Attempts per call, the first included (default 4). */
  readonly maxAttempts?: number;
  /** First back-off after a 5xx or network failure, doubled each time (default 500 ms). */
  readonly baseDelayMs?: number;
  /** Longest back-off (default 15 s). */
  readonly maxDelayMs?: number;
  /** Longest `retry_after` honoured; a longer one ends the call with the 429 (default 60 s). */
  readonly maxRetryAfterSeconds?: number;
  /** How to wait; tests pass a faster clock. Must reject when `signal` aborts. */
  readonly sleep?: (ms: number, signal?: AbortSignalLike) => Promise<void>;
}

/** The part of an abort signal used here (grammY's transformer signal is a polyfill type). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Waits `ms`, or rejects as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignalLike): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

type Verdict = { retry: false } | { retry: true; delayMs: number; reason: string };

/** A transformer that retries 429 (after `retry_after`), 5xx and network failures, with bounded attempts. */
export function createApiRetry(options: ApiRetryOptions): Transformer {
  const log = options.logger.child({ component: 'telegram-api' });
  const maxAttempts = Math.max(1, options.maxAttempts ?? 4);
  const baseDelayMs = options.baseDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 15_000;
  const maxRetryAfter = options.maxRetryAfterSeconds ?? 60;
  const sleep = options.sleep ?? abortableSleep;
  const backoff = (attempt: number) => Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));

  function judgeAnswer(answer: { ok: false; error_code: number; description: string; parameters?: { retry_after?: number } }, attempt: number): Verdict {
    if (answer.error_code === 429) {
      const after = answer.parameters?.retry_after;
      if (typeof after === 'number' && after > maxRetryAfter) return { retry: false };
      return { retry: true, delayMs: typeof after === 'number' ? after * 1000 : backoff(attempt), reason: `429 ${answer.description}` };
    }
    if (answer.error_code >= 500) return { retry: true, delayMs: backoff(attempt), reason: `${answer.error_code} ${answer.description}` };
    return { retry: false };
  }

  return async (prev, method, payload, signal) => {
    for (let attempt = 1; ; attempt++) {
      let verdict: Verdict;
      try {
        const answer = await prev(method, payload, signal);
        if (answer.ok) return answer;
        verdict = judgeAnswer(answer, attempt);
        if (!verdict.retry || attempt >= maxAttempts) {
          if (verdict.retry) log.warn('a Bot API call kept failing; giving up', { method, attempts: attempt, error_code: answer.error_code });
          return answer;
        }
      } catch (error) {
        // grammY's HttpError: the request failed or the answer was not JSON. Its message never holds the token.
        if (signal?.aborted) throw error;
        if (attempt >= maxAttempts) {
          log.warn('a Bot API call kept failing; giving up', { method, attempts: attempt, error });
          throw error;
        }
        verdict = { retry: true, delayMs: backoff(attempt), reason: (error as Error).message };
      }
      log.warn('a Bot API call failed; retrying', { method, attempt, retryInMs: verdict.delayMs, reason: verdict.reason });
      await sleep(verdict.delayMs, signal);
    }
  };
}
