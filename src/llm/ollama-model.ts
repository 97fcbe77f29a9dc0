/**
 * The Ollama adapter: `POST /api/chat` through the `ollama` client, non-streaming.
 *
 * The client cannot cancel a non-streaming call, so every attempt gets its own client whose
 * fetch carries the attempt's signal (deadline or caller's cancel). That fetch also notes the
 * `retry-after` header (the client's errors drop headers) and turns non-JSON error bodies into
 * Ollama's `{ "error": ... }` shape, because the client prints to stdout when it meets one.
 *
 * Ollama has no tool-call ids: we generate them, and send results back by tool name, which is
 * what Ollama matches on. `num_ctx` is set to the context window, so that the window the rest of
 * Nocturne budgets for is the one the server really uses (Ollama's own default is smaller).
 *
 * A JSON request with an answer schema sends the schema as `format` (Ollama 0.5 and later turn it
 * into a grammar); a server that refuses it (older ones only know `"json"`) gets `"json"` from then
 * on (schema-support.ts).
 */
import { randomUUID } from 'node:crypto';
import { Ollama, type ChatRequest, type ChatResponse, type Message, type Tool } from 'ollama';
import { createSilentLogger, type Logger } from '../shared/logger';
import { redactSecrets } from '../shared/redact';
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
import { errorNames, ollamaStatusOf } from '../shared/ollama-errors';
import { createSchemaSupport } from './schema-support';

export interface OllamaModelOptions {
  /** Base URL of the Ollama server, e.g. `http://127.0.0.1:11434`. */
  readonly host: string;
  /** e.g. `llama3.2`. */
  readonly model: string;
  readonly contextWindow?: number;
  readonly retry?: Partial<RetryPolicy>;
  readonly logger?: Logger;
  readonly fetch?: typeof fetch;
}

/** Added to the system prompt with `format: "json"`: Ollama's docs advise saying it in the prompt too. */
export const OLLAMA_JSON_INSTRUCTION = 'Answer with a single JSON object and nothing else.';

const MAX_ERROR_TEXT = 300;

/** What a 400 says when the schema is what was refused: an older server cannot read `format` as an object. */
const SCHEMA_REFUSAL = /format|schema/i;

/** Our conversation as Ollama chat messages (the system prompt first). */
export function toOllamaMessages(system: string | undefined, messages: readonly LlmMessage[]): Message[] {
  const out: Message[] = system ? [{ role: 'system', content: system }] : [];
  for (const message of messages) {
    if (message.role === 'tool') {
      out.push({ role: 'tool', content: message.content, tool_name: message.name });
    } else if (message.role === 'assistant' && message.toolCalls?.length) {
      out.push({
        role: 'assistant',
        content: message.content,
        tool_calls: message.toolCalls.map((call) => ({ function: { name: call.name, arguments: call.arguments } })),
      });
    } else if (message.role === 'user' && message.images?.length) {
      out.push({ role: 'user', content: message.content, images: message.images.map((image) => image.base64) });
    } else {
      out.push({ role: message.role, content: message.content });
    }
  }
  return out;
}

function toStopReason(doneReason: string | undefined, hasToolCalls: boolean): LlmStopReason {
  if (hasToolCalls) return 'tool_use';
  if (doneReason === 'stop' || doneReason === undefined || doneReason === '') return 'end';
  if (doneReason === 'length') return 'max_tokens';
  return 'other';
}

/** Creates the adapter; no connection is made until the first call. */
export function createOllamaModel(options: OllamaModelOptions): LanguageModel {
  const { host, model } = options;
  const contextWindow = options.contextWindow ?? 8192;
  const policy = resolveRetryPolicy(options.retry);
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'llm', provider: 'ollama', model });
  const baseFetch = options.fetch ?? fetch;
  let closed = false;
  const schemas = createSchemaSupport({ model, logger, refusal: SCHEMA_REFUSAL });

  /** A client for one attempt: its fetch carries the attempt's signal and notes `retry-after`. */
  function clientFor(signal: AbortSignal, seen: { retryAfterMs?: number }): Ollama {
    const attemptFetch: typeof fetch = async (input, init) => {
      const response = await baseFetch(input, { ...init, signal });
      if (response.ok) return response;
      seen.retryAfterMs = parseRetryAfter(response.headers);
      if (response.headers.get('content-type')?.includes('application/json')) return response;
      const text = (await response.text()).trim().slice(0, MAX_ERROR_TEXT);
      return new Response(JSON.stringify({ error: text || `HTTP ${response.status} ${response.statusText}`.trim() }), {
        status: response.status,
        statusText: response.statusText,
        headers: { 'content-type': 'application/json' },
      });
    };
    return new Ollama({ host, fetch: attemptFetch });
  }

  function toLlmError(error: unknown, retryAfterMs: number | undefined): LlmError {
    const base = { provider: 'ollama' as const, model, cause: error };
    // Redacted before it is cut, so a cut can never leave part of a key unrecognized.
    const reasonText = truncate(redactSecrets((error as Error)?.message ?? String(error)), MAX_ERROR_TEXT);
    const status = ollamaStatusOf(error);
    if (status !== undefined) {
      const reason = reasonForStatus(status) ?? 'server';
      return new LlmError(`Ollama answered ${status} for model "${model}": ${reasonText}`, {
        ...base,
        reason,
        status,
        retryAfterMs: status === 429 || status >= 500 ? retryAfterMs : undefined,
        hint:
          status === 404
            ? `Run \`ollama pull ${model}\` on the Ollama machine, or set LLM_MODEL to a model it has (\`ollama list\`).`
            : reason === 'server' || reason === 'rate_limited'
              ? 'Ollama is overloaded or failing; check its logs.'
              : undefined,
      });
    }
    const names = errorNames(error);
    if (names.includes('AbortError') || names.includes('TimeoutError')) {
      return new LlmError(`The call to Ollama model "${model}" was aborted`, { ...base, reason: 'aborted' });
    }
    const network = (names[0] === 'TypeError' && names.length > 1) || names.some((name) => /^E[A-Z_]+$/.test(name));
    if (network) {
      const cause = (error as { cause?: { message?: unknown } } | null)?.cause?.message;
      return new LlmError(`Cannot reach Ollama at ${host}: ${reasonText}${typeof cause === 'string' ? ` (${cause})` : ''}`, {
        ...base,
        reason: 'network',
        hint: 'Start Ollama (`ollama serve`) or point OLLAMA_HOST at a running server.',
      });
    }
    return new LlmError(`Calling Ollama model "${model}" failed: ${reasonText}`, { ...base, reason: 'bad_request' });
  }

  function toResponse(response: ChatResponse, durationMs: number): LlmResponse {
    const message = response.message ?? { role: 'assistant', content: '' };
    const toolCalls: LlmToolCall[] = (message.tool_calls ?? []).map((call) => {
      const args = call.function?.arguments as unknown;
      const parsed = typeof args === 'string' ? safeParseObject(args) : args;
      // Recent Ollama versions send an id; older ones do not.
      const id: unknown = (call as { id?: unknown }).id;
      return {
        id: typeof id === 'string' && id !== '' ? id : `call_${randomUUID()}`,
        name: call.function?.name ?? '',
        arguments: parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {},
      };
    });
    if (typeof message.content !== 'string') {
      throw new LlmError(`Ollama returned no message content for model "${model}"`, { reason: 'invalid_output', provider: 'ollama', model });
    }
    return {
      text: message.content,
      toolCalls,
      stopReason: toStopReason(response.done_reason, toolCalls.length > 0),
      usage: { inputTokens: response.prompt_eval_count ?? 0, outputTokens: response.eval_count ?? 0 },
      model: response.model ?? model,
      provider: 'ollama',
      durationMs,
    };
  }

  return {
    provider: 'ollama',
    model,
    contextWindow,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      if (closed) throw new LlmError('The Ollama model is closed', { reason: 'aborted', provider: 'ollama', model });
      const started = performance.now();
      const system = request.json ? [request.system, OLLAMA_JSON_INSTRUCTION].filter(Boolean).join('\n\n') : request.system;
      const bodyFor = (withSchema: boolean): ChatRequest & { stream: false } => ({
        model,
        stream: false,
        messages: toOllamaMessages(system, request.messages),
        ...(request.json && { format: withSchema && request.answerSchema ? { ...request.answerSchema } : 'json' }),
        ...(request.tools?.length && {
          tools: request.tools.map(
            (tool): Tool => ({
              type: 'function',
              function: { name: tool.name, description: tool.description, parameters: tool.parameters as Tool['function']['parameters'] },
            }),
          ),
        }),
        options: {
          num_predict: request.maxTokens ?? DEFAULT_MAX_TOKENS,
          num_ctx: contextWindow,
          ...(request.temperature !== undefined && { temperature: request.temperature }),
        },
      });
      const response = await schemas.attempt(request, (withSchema) =>
        withRetries({
          policy,
          logger,
          signal: request.signal,
          target: { provider: 'ollama', model, purpose: request.purpose },
          toLlmError: (error) => (error instanceof LlmError ? error : toLlmError(error, undefined)),
          attempt: async ({ signal }) => {
            const seen: { retryAfterMs?: number } = {};
            try {
              return await clientFor(signal, seen).chat(bodyFor(withSchema));
            } catch (error) {
              // Classified here, while the retry-after header the client dropped is still at hand.
              throw toLlmError(error, seen.retryAfterMs);
            }
          },
        }),
      );
      return toResponse(response, Math.round(performance.now() - started));
    },
    async close() {
      closed = true;
    },
  };
}

function safeParseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
