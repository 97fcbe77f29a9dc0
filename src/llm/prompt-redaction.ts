/**
 * The one door to the model provider is also a filter: every request passes through
 * {@link withPromptRedaction} before the adapter builds its wire request, so whatever a prompt
 * was assembled from (the person's message as written, working memory, retrieved memories, tool
 * results, a sleep batch of episodes), no pasted credential and none of the service's own secrets
 * leaves the process. The decorator is applied where the model is created for the service
 * (src/core.ts), around any model, so no reply, compaction, tool round or sleep call can skip it.
 *
 * The model sees `[REDACTED]` where a secret was: it can still say "you pasted a key", and it
 * cannot repeat the key, store it in a memory or send it to the provider's logs.
 */
import { redactSecrets } from '../shared/redact';
import type { LanguageModel, LlmMessage, LlmRequest, LlmToolCall } from './language-model';

/** Replaces secrets in one text. */
export type TextRedactor = (text: string) => string;

/** A JSON value with every string redacted (tool-call arguments the model wrote earlier). */
function redactJson(value: unknown, redact: TextRedactor): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactJson(item, redact));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactJson(inner, redact)]));
}

function redactCall(call: LlmToolCall, redact: TextRedactor): LlmToolCall {
  return { ...call, arguments: redactJson(call.arguments, redact) as Record<string, unknown> };
}

function redactMessage(message: LlmMessage, redact: TextRedactor): LlmMessage {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, content: redact(message.content), toolCalls: message.toolCalls.map((call) => redactCall(call, redact)) };
  }
  return { ...message, content: redact(message.content) };
}

/**
 * The system prompt redacted; with a cached prefix, each side of it on its own, so the prefix
 * length still points at the same place after a secret in it was replaced.
 */
function redactSystem(system: string, cachePrefixLength: number | undefined, redact: TextRedactor): Pick<LlmRequest, 'system' | 'cachePrefixLength'> {
  if (cachePrefixLength === undefined) return { system: redact(system) };
  const prefix = redact(system.slice(0, cachePrefixLength));
  return { system: `${prefix}${redact(system.slice(cachePrefixLength))}`, cachePrefixLength: prefix.length };
}

/** The request with its system prompt, every message and every earlier tool call's arguments redacted. */
export function redactRequest(request: LlmRequest, redact: TextRedactor): LlmRequest {
  return {
    ...request,
    ...(request.system !== undefined && redactSystem(request.system, request.cachePrefixLength, redact)),
    messages: request.messages.map((message) => redactMessage(message, redact)),
  };
}

/**
 * Wraps `model` so that every request is redacted before it is sent: by default with
 * `redactSecrets`, the filter of logs, errors and exports (the service's registered secrets and
 * every credential shape).
 */
export function withPromptRedaction(model: LanguageModel, redact: TextRedactor = redactSecrets): LanguageModel {
  return {
    provider: model.provider,
    model: model.model,
    contextWindow: model.contextWindow,
    complete: (request) => model.complete(redactRequest(request, redact)),
    close: () => model.close(),
  };
}
