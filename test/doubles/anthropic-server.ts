/**
 * A real HTTP server on loopback that speaks enough of Anthropic's Messages API
 * (`POST /v1/messages`, non-streaming) for the Anthropic adapter to be tested end to end through
 * the real `@anthropic-ai/sdk` client and real sockets.
 *
 * Replies come from a script (text, tool use, HTTP errors with `retry-after`, slow answers);
 * with the script empty it echoes the last user message. Every request is recorded with its
 * headers and body, and as a provider-neutral {@link SeenLlmRequest}.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  credentialOf,
  hang,
  headersOf,
  lastUserText,
  readBody,
  roughTokens,
  sendJson,
  type LlmResponder,
  type ScriptedLlmReply,
  type ScriptedToolCall,
  type SeenLlmRequest,
  type SeenMessage,
} from './llm-script';

export interface AnthropicDouble {
  /** Base URL to give the SDK as `baseURL`, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: SeenLlmRequest[];
  /** Queues `reply` for the next `times` requests (after replies already queued). */
  script(reply: ScriptedLlmReply, times?: number): void;
  /** Forgets recorded requests and unused replies. */
  reset(): void;
  stop(): Promise<void>;
}

export interface AnthropicDoubleOptions {
  /** When set, requests authenticated with anything else get a 401, as the real API does. */
  readonly apiKey?: string;
  /** Answers requests when the script is empty. */
  readonly responder?: LlmResponder;
}

type Block = Record<string, unknown> & { type?: unknown };

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Block[]).filter((block) => block.type === 'text').map((block) => String(block.text ?? '')).join('');
}

/** Anthropic's messages (content strings or blocks) as neutral messages; tool results become `tool` messages. */
function toSeenMessages(messages: unknown): SeenMessage[] {
  const out: SeenMessage[] = [];
  for (const message of Array.isArray(messages) ? (messages as { role?: unknown; content?: unknown }[]) : []) {
    const blocks: Block[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? (message.content as Block[]) : [];
    for (const block of blocks.filter((b) => b.type === 'tool_result')) {
      out.push({ role: 'tool', text: textOf(block.content), toolCallId: String(block.tool_use_id) });
    }
    const text = textOf(blocks);
    const toolCalls: ScriptedToolCall[] = blocks
      .filter((block) => block.type === 'tool_use')
      .map((block) => ({ id: String(block.id), name: String(block.name), arguments: (block.input ?? {}) as Record<string, unknown> }));
    if (message.role === 'assistant') out.push({ role: 'assistant', text, ...(toolCalls.length > 0 && { toolCalls }) });
    else if (text !== '' || blocks.every((block) => block.type !== 'tool_result')) out.push({ role: 'user', text });
  }
  return out;
}

/** Starts the double on 127.0.0.1 with a free port. */
export async function startAnthropicDouble(options: AnthropicDoubleOptions = {}): Promise<AnthropicDouble> {
  const replies: ScriptedLlmReply[] = [];
  const requests: SeenLlmRequest[] = [];
  let counter = 0;

  function message(model: string, content: Block[], stopReason: string, inputTokens: number, outputTokens: number) {
    return {
      id: `msg_double_${++counter}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
  }

  function sendError(response: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
    sendJson(response, status, { type: 'error', error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message: text } }, {
      'request-id': `req_double_${counter}`,
      ...headers,
    });
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const headers = headersOf(request);
    if (request.method !== 'POST' || path !== '/v1/messages') {
      sendError(response, 404, `${request.method} ${path} is not part of this double`);
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      sendError(response, 400, 'invalid JSON body');
      return;
    }
    const messages = toSeenMessages(body.messages);
    const model = typeof body.model === 'string' ? body.model : 'unknown';
    const unauthorized = options.apiKey !== undefined && credentialOf(headers) !== options.apiKey;
    const seen = {
      path,
      headers,
      body,
      model,
      system: typeof body.system === 'string' ? body.system : body.system === undefined ? undefined : textOf(body.system),
      messages,
      tools: Array.isArray(body.tools) ? (body.tools as { name?: unknown }[]).map((tool) => String(tool.name)) : [],
      json: false,
      maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
      temperature: typeof body.temperature === 'number' ? body.temperature : undefined,
    };
    const reply: ScriptedLlmReply | undefined = unauthorized ? { kind: 'status', status: 401, message: 'invalid x-api-key' } : (replies.shift() ?? options.responder?.(seen));
    requests.push({ ...seen, reply: reply?.kind ?? 'default' });

    const inputTokens = roughTokens(raw);
    switch (reply?.kind) {
      case 'status': {
        sendError(response, reply.status, reply.message ?? `scripted failure ${reply.status}`, reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter });
        return;
      }
      case 'tool_use': {
        let index = 0;
        const content: Block[] = [
          ...(reply.text ? [{ type: 'text', text: reply.text }] : []),
          ...reply.calls.map((call) => ({ type: 'tool_use', id: call.id ?? `toolu_double_${counter}_${index++}`, name: call.name, input: call.arguments })),
        ];
        sendJson(response, 200, message(model, content, 'tool_use', reply.inputTokens ?? inputTokens, reply.outputTokens ?? 10 * reply.calls.length));
        return;
      }
      case 'text': {
        sendJson(response, 200, message(model, [{ type: 'text', text: reply.text }], reply.stop === 'max_tokens' ? 'max_tokens' : 'end_turn',
          reply.inputTokens ?? inputTokens, reply.outputTokens ?? roughTokens(reply.text)));
        return;
      }
      case 'hang':
        if (!(await hang(response, reply.ms))) return;
        break;
      default:
        break;
    }
    const text = `echo: ${lastUserText(messages)}`;
    sendJson(response, 200, message(model, [{ type: 'text', text }], 'end_turn', inputTokens, roughTokens(text)));
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, String(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(reply, times = 1) {
      for (let i = 0; i < times; i++) replies.push(reply);
    },
    reset() {
      replies.length = 0;
      requests.length = 0;
    },
    stop() {
      return new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
