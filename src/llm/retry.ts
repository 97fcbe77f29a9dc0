/**
 * The one retry policy of every model call. The SDKs' own retries are turned off
 * (`maxRetries: 0`), so the attempts made here are all the attempts there are, and tests can
 * count them on the server.
 *
 * Retried: 429 (waiting what `retry-after` asks, capped), 5xx, network errors and timeouts.
 * Never retried: any other 4xx (a bad key or a bad request stays bad), invalid output, and a
 * call the caller aborted. Each attempt has its own deadline; attempts are bounded.
 */
import type { Logger } from '../shared/logger';
import { LlmError, type LlmProvider } from './language-model';

export interface RetryPolicy {
  /** Attempts in total, the first one included. */
  readonly maxAttempts: number;
  /** Deadline of one attempt, reading the answer included. */
  readonly timeoutMs: number;
  /** Backoff before the first retry; doubles with each further one. */
  readonly baseDelayMs: number;
  /** Ceiling of the exponential backoff. */
  readonly maxDelayMs: number;
  /** Ceiling of a wait a `retry-after` header asks for (a server asking for an hour gets this). */
  readonly maxRetryAfterMs: number;
  /** Source of jitter in [0, 1); tests pass a constant. */
  readonly random?: () => number;
  /** How to wait; tests pass one that records the delays and waits less. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 3,
  timeoutMs: 30_000,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/** The default policy with `overrides` applied, validated (a policy of 0 attempts is a bug, not a setting). */
export function resolveRetryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  for (const [name, value, min] of [
    ['maxAttempts', policy.maxAttempts, 1],
    ['timeoutMs', policy.timeoutMs, 1],
    ['baseDelayMs', policy.baseDelayMs, 0],
    ['maxDelayMs', policy.maxDelayMs, 0],
    ['maxRetryAfterMs', policy.maxRetryAfterMs, 0],
  ] as const) {
    if (!Number.isFinite(value) || value < min) throw new RangeError(`retry policy ${name} must be >= ${min}, got ${value}`);
  }
  return policy;
}

/**
 * Exponential backoff with "equal jitter" before retry number `retry` (0 for the first retry):
 * half of the ceiling is fixed, half random, so clients that failed together spread out.
 */
export function backoffDelayMs(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * Milliseconds a `retry-after-ms` or `retry-after` header asks for (seconds or an HTTP date);
 * `undefined` when absent or unreadable.
 */
export function parseRetryAfter(headers: { get(name: string): string | null } | undefined | null, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles with `work`, or rejects as soon as `signal` aborts: an SDK that ignores the signal cannot outlive the deadline. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export interface RetryTarget {
  readonly provider: LlmProvider;
  readonly model: string;
  readonly purpose: string;
}

export interface WithRetriesParams<T> {
  readonly policy: RetryPolicy;
  readonly target: RetryTarget;
  readonly logger: Logger;
  /** The caller's cancellation; stops the current attempt and any wait, and is never retried. */
  readonly signal?: AbortSignal;
  /** One attempt; it must pass `signal` to the SDK so that the deadline really cancels the request. */
  readonly attempt: (context: { readonly attempt: number; readonly signal: AbortSignal }) => Promise<T>;
  /** Turns what the SDK threw into an LlmError (status, retry-after, network...). */
  readonly toLlmError: (error: unknown) => LlmError;
}

/** Runs `attempt` until it succeeds, fails for good, or the attempts are used up; throws an LlmError stamped with the attempt count. */
export async function withRetries<T>(params: WithRetriesParams<T>): Promise<T> {
  const { policy, target, logger, signal } = params;
  const sleep = policy.sleep ?? abortableSleep;
  const random = policy.random ?? Math.random;
  const describe = `${target.provider} model "${target.model}"`;

  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) {
      throw new LlmError(`The ${target.purpose} call to ${describe} was cancelled`, {
        reason: 'aborted',
        provider: target.provider,
        model: target.model,
        attempts: attempt - 1,
        cause: signal.reason,
      });
    }
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException(`timed out after ${policy.timeoutMs} ms`, 'TimeoutError'));
    }, policy.timeoutMs);
    const forwardAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forwardAbort, { once: true });

    let failure: LlmError;
    try {
      return await untilAborted(params.attempt({ attempt, signal: controller.signal }), controller.signal);
    } catch (error) {
      if (signal?.aborted) {
        throw new LlmError(`The ${target.purpose} call to ${describe} was cancelled`, {
          reason: 'aborted',
          provider: target.provider,
          model: target.model,
          attempts: attempt,
          cause: signal.reason,
        });
      }
      failure = timedOut
        ? new LlmError(`${describe} did not answer within ${policy.timeoutMs} ms`, {
            reason: 'timeout',
            provider: target.provider,
            model: target.model,
            cause: error,
            hint: 'The provider is slow or overloaded; try again later or raise LLM_TIMEOUT_MS.',
          })
        : params.toLlmError(error);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forwardAbort);
    }

    if (!failure.retryable || attempt >= policy.maxAttempts) throw failure.withAttempts(attempt);
    const delayMs = Math.round(
      failure.retryAfterMs !== undefined ? Math.min(failure.retryAfterMs, policy.maxRetryAfterMs) : backoffDelayMs(attempt - 1, policy, random),
    );
    logger.warn('model call failed, retrying', {
      provider: target.provider,
      model: target.model,
      purpose: target.purpose,
      reason: failure.reason,
      status: failure.status,
      attempt,
      delayMs,
      error: failure.message,
    });
    try {
      await sleep(delayMs, signal);
    } catch (error) {
      throw new LlmError(`The ${target.purpose} call to ${describe} was cancelled`, {
        reason: 'aborted',
        provider: target.provider,
        model: target.model,
        attempts: attempt,
        cause: error,
      });
    }
  }
}
