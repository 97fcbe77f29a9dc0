/**
 * The Anthropic adapter: the Messages API through the official SDK, non-streaming.
 *
 * Our messages map onto Anthropic's content blocks: an assistant turn with tool calls becomes
 * `text` + `tool_use` blocks, and tool results go back as `tool_result` blocks in the next user
 * turn (consecutive results are merged into one turn, as the API requires). JSON answers are
 * asked for with an instruction in the system prompt and, when the request carries an answer
 * schema, with structured outputs (`output_config.format`), which a server that refuses them
 * stops getting (schema-support.ts); no assistant prefill, so the answer is parsed as it comes
 * (see structured.ts).
 *
 * Prompt caching: a request that says how much of its system prompt is stable gets a cache
 * breakpoint there, so the tools and that prefix are read from the cache by the next call; the
 * cache tokens of the usage are reported apart.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { redactSecrets, registerSecrets } from '../shared/redact';
import { createSilentLogger, type Logger } from '../shared/logger';
import {
  DEFAULT_MAX_TOKENS,
  LlmError,
  reasonForStatus,
  truncate,
  type LanguageModel,
  type LlmMessage,
  type LlmRequest,
  type LlmResponse,
  type LlmStopReason,
  type LlmToolCall,
} from './language-model';
import { parseRetryAfter, resolveRetryPolicy, withRetries, type RetryPolicy } from './retry';
import { createSchemaSupport } from './schema-support';

export interface AnthropicModelOptions {
  readonly apiKey: string;
  /** e.g. `claude-sonnet-4-6`. */
  readonly model: string;
  /** Override of the API address (a proxy, or a loopback server in tests). */
  readonly baseUrl?: string;
  readonly contextWindow?: number;
  /** Timeout and attempts; the defaults are {@link DEFAULT_RETRY_POLICY}'s. */
  readonly retry?: Partial<RetryPolicy>;
  readonly logger?: Logger;
  readonly fetch?: typeof fetch;
}

/** Appended to the system prompt when a request asks for JSON. */
export const JSON_INSTRUCTION = 'Answer with a single JSON object and nothing else: no prose before or after it, no Markdown code fences.';

const MAX_ERROR_TEXT = 300;

type AnthropicSdk = typeof import('@anthropic-ai/sdk');

/**
 * The SDK is loaded by the first call, not with this module: it is the largest package the core
 * loads, and most processes that build the model never call it (a CLI command that reads the
 * store), or not before they are ready (`npm start` answers /healthz without it).
 */
let sdk: Promise<AnthropicSdk> | undefined;
const loadSdk = (): Promise<AnthropicSdk> => (sdk ??= import('@anthropic-ai/sdk'));

/**
 * What a 400 says when the schema is what was refused: the field (`output_config`, or
 * `output_format` in the beta's words), or the schema and a keyword in it.
 */
const SCHEMA_REFUSAL = /output_config|output_format|json_schema|structured output|schema/i;

/**
 * The system prompt as blocks: the stable prefix carries the cache breakpoint (the tools before
 * it are cached with it), the rest of the text follows uncached. A plain string without a prefix.
 */
export function toAnthropicSystem(system: string | undefined, cachePrefixLength: number | undefined): string | Anthropic.TextBlockParam[] | undefined {
  if (!system) return undefined;
  const cut = Math.min(cachePrefixLength ?? 0, system.length);
  if (cut <= 0 || system.slice(0, cut).trim() === '') return system;
  const rest = system.slice(cut);
  return [
    { type: 'text', text: system.slice(0, cut), cache_control: { type: 'ephemeral' } },
    ...(rest.trim() === '' ? [] : [{ type: 'text' as const, text: rest }]),
  ];
}

type Block = Anthropic.ContentBlockParam;

/** Our conversation as Anthropic messages: roles alternate, tool results ride in user turns. */
export function toAnthropicMessages(messages: readonly LlmMessage[]): Anthropic.MessageParam[] {
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      push('user', [{ type: 'tool_result', tool_use_id: message.toolCallId, content: message.content, ...(message.isError && { is_error: true }) }]);
    } else if (message.role === 'assistant') {
      const blocks: Block[] = message.content.trim() === '' ? [] : [{ type: 'text', text: message.content }];
      for (const call of message.toolCalls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: call.arguments });
      push('assistant', blocks);
    } else {
      // Images first, then the words about them, as Anthropic recommends.
      const images: Block[] = (message.images ?? []).map((image) => ({
        type: 'image',
        source: { type: 'base64', media_type: image.mime as Anthropic.Base64ImageSource['media_type'], data: image.base64 },
      }));
      push('user', [...images, { type: 'text', text: message.content }]);
    }
  }
  // A lone text block is sent as a plain string: the common case stays readable in logs and doubles.
  return out.map(({ role, content }) =>
    content.length === 1 && content[0]!.type === 'text' ? { role, content: (content[0] as Anthropic.TextBlockParam).text } : { role, content },
  );
}

function toStopReason(reason: string | null | undefined): LlmStopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end';
    case 'max_tokens':
      return 'max_tokens';
    case 'tool_use':
      return 'tool_use';
    default:
      return 'other';
  }
}

/** Creates the adapter. The API key is registered as a secret at once, so no message or log line can carry it. */
export function createAnthropicModel(options: AnthropicModelOptions): LanguageModel {
  const { apiKey, model } = options;
  registerSecrets([apiKey]);
  const policy = resolveRetryPolicy(options.retry);
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'llm', provider: 'anthropic', model });
  let client: Anthropic | undefined;
  const clientOf = (loaded: AnthropicSdk): Anthropic =>
    (client ??= new loaded.default({
      apiKey,
      baseURL: options.baseUrl ?? null,
      maxRetries: 0,
      // Our deadline (retry.ts) fires first; this one only guards against a deadline that was lost.
      timeout: policy.timeoutMs + 1_000,
      ...(options.fetch && { fetch: options.fetch }),
    }));
  let closed = false;
  const schemas = createSchemaSupport({ model, logger, refusal: SCHEMA_REFUSAL });

  function toLlmError(error: unknown, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError }: AnthropicSdk): LlmError {
    const base = { provider: 'anthropic' as const, model, cause: error };
    if (error instanceof APIUserAbortError) return new LlmError(`The call to Anthropic model "${model}" was aborted`, { ...base, reason: 'aborted' });
    if (error instanceof APIConnectionTimeoutError) {
      return new LlmError(`Anthropic model "${model}" did not answer in time`, { ...base, reason: 'timeout' });
    }
    if (error instanceof APIConnectionError) {
      const cause = error.cause as { message?: unknown; cause?: { code?: unknown } } | undefined;
      const detail = [cause?.message, cause?.cause?.code].filter((part) => typeof part === 'string').join(': ');
      return new LlmError(`Cannot reach the Anthropic API${options.baseUrl ? ` at ${options.baseUrl}` : ''}: ${error.message}${detail ? ` (${detail})` : ''}`, {
        ...base,
        reason: 'network',
        hint: 'Check the network (and ANTHROPIC_BASE_URL if set).',
      });
    }
    if (error instanceof APIError && typeof error.status === 'number') {
      const status = error.status;
      const reason = reasonForStatus(status) ?? 'server';
      // Redacted before it is cut, so a cut can never leave part of a key unrecognized.
      const said = truncate(redactSecrets(error.apiMessage ?? error.message), MAX_ERROR_TEXT);
      return new LlmError(`Anthropic answered ${status} for model "${model}": ${said}`, {
        ...base,
        reason,
        status,
        retryAfterMs: status === 429 || status >= 500 ? parseRetryAfter(error.headers) : undefined,
        details: { type: error.type ?? undefined, requestId: error.requestID ?? undefined },
        hint:
          reason === 'auth'
            ? 'Check ANTHROPIC_API_KEY (a valid key with access to this model).'
            : reason === 'bad_request'
              ? `Check LLM_MODEL ("${model}") and the request; this will not succeed by retrying.`
              : undefined,
      });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new LlmError(`Calling Anthropic model "${model}" failed: ${message}`, { ...base, reason: 'bad_request' });
  }

  function toResponse(message: Anthropic.Message, durationMs: number): LlmResponse {
    const texts: string[] = [];
    const toolCalls: LlmToolCall[] = [];
    for (const block of message.content ?? []) {
      if (block.type === 'text') texts.push(block.text);
      else if (block.type === 'tool_use') {
        const input = block.input;
        toolCalls.push({ id: block.id, name: block.name, arguments: input !== null && typeof input === 'object' ? (input as Record<string, unknown>) : {} });
      }
    }
    const usage = message.usage;
    return {
      text: texts.join(''),
      toolCalls,
      stopReason: toStopReason(message.stop_reason),
      usage: {
        // Cached prompt tokens are input tokens too: budgets count everything the model read.
        inputTokens: (usage?.input_tokens ?? 0) + (usage?.cache_creation_input_tokens ?? 0) + (usage?.cache_read_input_tokens ?? 0),
        outputTokens: usage?.output_tokens ?? 0,
        cacheReadTokens: usage?.cache_read_input_tokens ?? 0,
        cacheWriteTokens: usage?.cache_creation_input_tokens ?? 0,
      },
      model: message.model ?? model,
      provider: 'anthropic',
      durationMs,
    };
  }

  return {
    provider: 'anthropic',
    model,
    contextWindow: options.contextWindow ?? 200_000,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      if (closed) throw new LlmError('The Anthropic model is closed', { reason: 'aborted', provider: 'anthropic', model });
      const loaded = await loadSdk();
      const api = clientOf(loaded);
      const started = performance.now();
      const text = request.json ? [request.system, JSON_INSTRUCTION].filter(Boolean).join('\n\n') : request.system;
      const system = toAnthropicSystem(text, request.cachePrefixLength);
      const bodyFor = (withSchema: boolean): Anthropic.MessageCreateParamsNonStreaming => ({
        model,
        max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
        messages: toAnthropicMessages(request.messages),
        ...(system && { system }),
        ...(request.temperature !== undefined && { temperature: request.temperature }),
        ...(request.tools?.length && {
          tools: request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters as Anthropic.Tool.InputSchema })),
        }),
        ...(withSchema && request.answerSchema && { output_config: { format: { type: 'json_schema', schema: { ...request.answerSchema } } } }),
      });
      const message = await schemas.attempt(request, (withSchema) =>
        withRetries({
          policy,
          logger,
          signal: request.signal,
          toLlmError: (error) => toLlmError(error, loaded),
          target: { provider: 'anthropic', model, purpose: request.purpose },
          attempt: ({ signal }) => api.messages.create(bodyFor(withSchema), { signal }),
        }),
      );
      return toResponse(message, Math.round(performance.now() - started));
    },
    async close() {
      closed = true;
    },
  };
}
