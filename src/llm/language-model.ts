/**
 * The language-model port: what sleep (consolidation, soul, digests) and the agent loop need from
 * a chat model, and nothing more. Adapters (Anthropic, Ollama) translate it to their wire format;
 * decorators (usage recording) wrap it; callers never see a vendor type or a vendor error.
 *
 * The message shape is provider-neutral and supports a tool-use loop on both providers: an
 * assistant turn may carry tool calls, and each result goes back as a `tool` message naming the
 * call it answers (Anthropic matches by id, Ollama by tool name; the adapters use what they need).
 */
import { AppError, type ErrorCategory } from '../shared/errors';

/** A call the model asked for; `id` is the provider's (or a generated one where it has none). */
export interface LlmToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/**
 * A picture shown to the model with a user turn (a photo the person sent). Only models that can
 * see take it; one that cannot refuses the call (a 400), which the caller treats as "cannot see".
 */
export interface LlmImage {
  /** image/jpeg, image/png, image/gif or image/webp. */
  readonly mime: string;
  /** The bytes, base64-encoded (both providers take images inline). */
  readonly base64: string;
}

/** One turn of a conversation. `system` is not a message: it goes in {@link LlmRequest.system}. */
export type LlmMessage =
  | { readonly role: 'user'; readonly content: string; readonly images?: readonly LlmImage[] }
  | { readonly role: 'assistant'; readonly content: string; readonly toolCalls?: readonly LlmToolCall[] }
  | {
      readonly role: 'tool';
      /** The {@link LlmToolCall.id} this result answers. */
      readonly toolCallId: string;
      readonly name: string;
      readonly content: string;
      /** The tool failed; `content` says why (the model may then try something else). */
      readonly isError?: boolean;
    };

/** A JSON schema for a tool's arguments; the top level is always an object. */
export interface JsonObjectSchema {
  readonly type: 'object';
  readonly properties?: Record<string, unknown>;
  readonly required?: readonly string[];
  readonly [keyword: string]: unknown;
}

/** A tool the model may call; `description` is what the model reads to decide when. */
export interface LlmTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonObjectSchema;
}

export interface LlmRequest {
  readonly system?: string;
  readonly messages: readonly LlmMessage[];
  /** Upper bound on generated tokens; default {@link DEFAULT_MAX_TOKENS}. */
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly tools?: readonly LlmTool[];
  /**
   * Ask for one JSON object as the answer (Ollama: `format: "json"`; Anthropic: an instruction in
   * the system prompt). The text still has to be parsed: see `completeStructured`.
   */
  readonly json?: boolean;
  /**
   * With `json`: the JSON Schema the answer must follow (see answer-schema.ts), sent as the
   * provider's structured-output format (Anthropic `output_config.format`, Ollama `format`) so the
   * model cannot leave the shape. A server that refuses it gets the call again without it, once;
   * the adapter then stops sending it for this model (the answer is still validated either way).
   */
  readonly answerSchema?: JsonObjectSchema;
  /**
   * How many characters at the start of `system` stay the same from call to call (the instructions
   * and the soul, before per-message memories): Anthropic caches the prompt up to there (tools
   * included, as they come first), so the next reply of the conversation reads it from the cache.
   * Left out: no cache breakpoint. Ollama reuses a matching prefix by itself and ignores it.
   */
  readonly cachePrefixLength?: number;
  /** Why the call is made (`consolidation`, `reply`, ...): recorded with its usage. */
  readonly purpose: string;
  /** The scope the call works for, so usage can be budgeted per scope. */
  readonly scopeId?: string;
  /** The sleep run (or other job) the call belongs to. */
  readonly runId?: string;
  /** Cancels the call, including any retry wait. */
  readonly signal?: AbortSignal;
}

export type LlmStopReason = 'end' | 'max_tokens' | 'tool_use' | 'other';

export interface LlmUsage {
  /** Everything the model read, cached prompt tokens included (budgets count them all). */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Of `inputTokens`: read from the provider's prompt cache (billed at a fraction). */
  readonly cacheReadTokens?: number;
  /** Of `inputTokens`: written to the provider's prompt cache (billed at a premium). */
  readonly cacheWriteTokens?: number;
}

export type LlmProvider = 'anthropic' | 'ollama';

export interface LlmResponse {
  /** All text blocks of the answer, joined. Empty when the model only called tools. */
  readonly text: string;
  readonly toolCalls: readonly LlmToolCall[];
  readonly stopReason: LlmStopReason;
  readonly usage: LlmUsage;
  /** The model that answered, as the provider names it. */
  readonly model: string;
  readonly provider: LlmProvider;
  /** Wall time of the whole call, retries and backoff included. */
  readonly durationMs: number;
}

/** A chat model. Implementations retry transient failures themselves and throw only {@link LlmError}. */
export interface LanguageModel {
  readonly provider: LlmProvider;
  readonly model: string;
  /** Tokens the model can see at once (prompt + answer); context packing budgets against it. */
  readonly contextWindow: number;
  complete(request: LlmRequest): Promise<LlmResponse>;
  /** Refuses further calls; safe to call twice. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_TOKENS = 1024;

/** What went wrong, in terms a caller can act on. */
export type LlmErrorReason =
  | 'timeout'
  | 'rate_limited'
  | 'server'
  | 'network'
  | 'auth'
  | 'bad_request'
  | 'invalid_output'
  | 'aborted'
  /** The caller's token budget does not cover the call: it was not sent (see sleep/token-budget.ts). */
  | 'budget';

/** Reasons that another attempt may fix. */
const RETRYABLE: ReadonlySet<LlmErrorReason> = new Set(['timeout', 'rate_limited', 'server', 'network']);

const CATEGORY: Record<LlmErrorReason, ErrorCategory> = {
  timeout: 'third_party',
  rate_limited: 'third_party',
  server: 'third_party',
  network: 'third_party',
  auth: 'user',
  bad_request: 'system',
  invalid_output: 'third_party',
  aborted: 'system',
  budget: 'user',
};

export interface LlmErrorOptions {
  readonly reason: LlmErrorReason;
  readonly provider?: LlmProvider;
  readonly model?: string;
  /** HTTP status of the answer, when there was one. */
  readonly status?: number;
  /** How long the provider asked us to wait (from `retry-after`), in milliseconds. */
  readonly retryAfterMs?: number;
  /** Attempts made before giving up (set by the retry loop). */
  readonly attempts?: number;
  readonly hint?: string;
  readonly cause?: unknown;
  readonly details?: Record<string, unknown>;
}

/**
 * The only error a {@link LanguageModel} throws. `code` is `llm.<reason>`; the message is
 * redacted of registered secrets (the API key is registered by the Anthropic adapter).
 */
export class LlmError extends AppError {
  readonly reason: LlmErrorReason;
  /** Whether another attempt could succeed; the retry loop has already used its attempts. */
  readonly retryable: boolean;
  readonly provider?: LlmProvider;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly attempts?: number;

  constructor(message: string, options: LlmErrorOptions) {
    super(message, {
      code: `llm.${options.reason}`,
      category: CATEGORY[options.reason],
      hint: options.hint,
      cause: options.cause,
      details: {
        ...options.details,
        ...(options.provider && { provider: options.provider }),
        ...(options.model && { model: options.model }),
        ...(options.status !== undefined && { status: options.status }),
        ...(options.attempts !== undefined && { attempts: options.attempts }),
      },
    });
    this.name = 'LlmError';
    this.reason = options.reason;
    this.retryable = RETRYABLE.has(options.reason);
    this.provider = options.provider;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.attempts = options.attempts;
  }

  /** The same failure, stamped with the number of attempts the retry loop made. */
  withAttempts(attempts: number): LlmError {
    return new LlmError(this.message, {
      reason: this.reason,
      provider: this.provider,
      status: this.status,
      retryAfterMs: this.retryAfterMs,
      attempts,
      hint: this.hint,
      cause: this.cause,
      details: this.details,
    });
  }
}

/** Reason for an HTTP status that is an error; `undefined` for 2xx/3xx. */
export function reasonForStatus(status: number): LlmErrorReason | undefined {
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status === 401 || status === 403) return 'auth';
  if (status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  return undefined;
}

/** Text of all text-like content, for logs and error messages: at most `max` characters. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
