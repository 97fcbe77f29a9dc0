/**
 * A real HTTP server on loopback that speaks enough of Anthropic's Messages API
 * (`POST /v1/messages`, non-streaming) for the Anthropic adapter to be tested end to end through
 * the real `@anthropic-ai/sdk` client and real sockets.
 *
 * Replies come from a script (text, tool use, HTTP errors with `retry-after`, slow answers);
 * with the script empty it echoes the last user message. Every request is recorded with its
 * headers and body, and as a provider-neutral {@link SeenLlmRequest}.
 *
 * Structured outputs: an answer schema (`output_config.format`) is recorded and checked against
 * the subset the real API accepts (every object closed, no bounds); a schema outside it is
 * refused with the API's 400. `refuseSchemas` makes the double a server without structured
 * outputs, which refuses the field itself.
 *
 * Prompt caching: the prefix up to the last `cache_control` breakpoint (tools, then system
 * blocks) is remembered per model; the first request with it reports it as
 * `cache_creation_input_tokens`, later ones as `cache_read_input_tokens` (no minimum length and
 * no expiry, unlike the real cache).
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
  /** Forgets recorded requests, unused replies, the prompt cache and the refusal of schemas. */
  reset(): void;
  /** Refuses requests carrying `output_config` with a 400, as an API or proxy without structured outputs does. */
  refuseSchemas(on: boolean): void;
  /** Refuses requests carrying an image with the API's 400, as a model that cannot see does. */
  refuseImages(on: boolean): void;
  stop(): Promise<void>;
}

export interface AnthropicDoubleOptions {
  /** When set, requests authenticated with anything else get a 401, as the real API does. */
  readonly apiKey?: string;
  /** Answers requests when the script is empty. */
  readonly responder?: LlmResponder;
  /** Start refusing answer schemas (see {@link AnthropicDouble.refuseSchemas}). */
  readonly refuseSchemas?: boolean;
  /** Start refusing images (see {@link AnthropicDouble.refuseImages}). */
  readonly refuseImages?: boolean;
}

/** Keywords the real API refuses in an answer schema, by the type it names in its message. */
const UNSUPPORTED = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'maxItems'];

/** Why the API would refuse `schema` as an answer schema, in its own words; undefined when it is accepted. */
export function anthropicSchemaProblem(schema: unknown, at = 'schema'): string | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return undefined;
  const node = schema as Record<string, unknown>;
  if (at === 'schema' && node.type !== 'object') return `${at}: the top-level type must be 'object'`;
  for (const key of UNSUPPORTED) {
    if (key in node) return `${at}: For '${String(node.type ?? 'any')}' type, property '${key}' is not supported`;
  }
  if (typeof node.minItems === 'number' && node.minItems > 1) return `${at}: minItems values other than 0 or 1 are not supported`;
  if (Array.isArray(node.type)) return `${at}: a list of types is not supported; use anyOf`;
  if ((node.type === 'object' || node.properties) && node.additionalProperties !== false) {
    return `${at}: For 'object' type, 'additionalProperties' must be explicitly set to false`;
  }
  const children: Array<[string, unknown]> = [
    ...Object.entries((node.properties ?? {}) as Record<string, unknown>).map(([name, child]) => [`${at}.properties.${name}`, child] as [string, unknown]),
    ...(node.items ? [[`${at}.items`, node.items] as [string, unknown]] : []),
    ...(['anyOf', 'allOf'] as const).flatMap((key) =>
      Array.isArray(node[key]) ? (node[key] as unknown[]).map((child, i) => [`${at}.${key}[${i}]`, child] as [string, unknown]) : [],
    ),
  ];
  for (const [path, child] of children) {
    const problem = anthropicSchemaProblem(child, path);
    if (problem) return problem;
  }
  return undefined;
}

/** Breakpoints anywhere in the request, and the prefix (tools, then system blocks) up to the last one there. */
function cachePrefixOf(body: Record<string, unknown>): { breakpoints: number; prefix?: string } {
  const marked = (block: unknown) =>
    block !== null && typeof block === 'object' && (block as Block).cache_control !== undefined && (block as Block).cache_control !== null;
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  const system = Array.isArray(body.system) ? (body.system as unknown[]) : [];
  const messageBlocks = (Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : []).flatMap((m) =>
    Array.isArray(m.content) ? (m.content as unknown[]) : [],
  );
  const breakpoints = [...tools, ...system, ...messageBlocks].filter(marked).length;
  const ordered: Array<['tool' | 'system', unknown]> = [
    ...tools.map((t) => ['tool', t] as ['tool', unknown]),
    ...system.map((b) => ['system', b] as ['system', unknown]),
  ];
  let last = -1;
  ordered.forEach(([, block], i) => {
    if (marked(block)) last = i;
  });
  if (last < 0) return { breakpoints };
  return { breakpoints, prefix: JSON.stringify([body.model, ordered.slice(0, last + 1)]) };
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
  return (content as Block[])
    .filter((block) => block.type === 'text')
    .map((block) => String(block.text ?? ''))
    .join('');
}

/** Anthropic's messages (content strings or blocks) as neutral messages; tool results become `tool` messages. */
function toSeenMessages(messages: unknown): SeenMessage[] {
  const out: SeenMessage[] = [];
  for (const message of Array.isArray(messages) ? (messages as { role?: unknown; content?: unknown }[]) : []) {
    const blocks: Block[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? (message.content as Block[]) : [];
    for (const block of blocks.filter((b) => b.type === 'tool_result')) {
      out.push({ role: 'tool', text: textOf(block.content), toolCallId: String(block.tool_use_id) });
    }
    const text = textOf(blocks);
    const toolCalls: ScriptedToolCall[] = blocks
      .filter((block) => block.type === 'tool_use')
      .map((block) => ({ id: String(block.id), name: String(block.name), arguments: (block.input ?? {}) as Record<string, unknown> }));
    const images = blocks.filter((block) => block.type === 'image').map((block) => String((block.source as { data?: unknown } | undefined)?.data ?? ''));
    if (message.role === 'assistant') out.push({ role: 'assistant', text, ...(toolCalls.length > 0 && { toolCalls }) });
    else if (text !== '' || blocks.every((block) => block.type !== 'tool_result')) out.push({ role: 'user', text, ...(images.length > 0 && { images }) });
  }
  return out;
}

/** Starts the double on 127.0.0.1 with a free port. */
export async function startAnthropicDouble(options: AnthropicDoubleOptions = {}): Promise<AnthropicDouble> {
  const replies: ScriptedLlmReply[] = [];
  const requests: SeenLlmRequest[] = [];
  let counter = 0;
  let refusing = options.refuseSchemas ?? false;
  let blind = options.refuseImages ?? false;
  /** Cached prefixes and their size in tokens. */
  const cached = new Map<string, number>();
  /** The cache figures of the request being answered. */
  let cache = { read: 0, write: 0 };

  function message(model: string, content: Block[], stopReason: string, inputTokens: number, outputTokens: number) {
    // The cached part is reported apart from, not within, input_tokens, as the API does.
    const cachedTokens = Math.min(cache.read + cache.write, Math.max(0, inputTokens - 1));
    const read = cache.read > 0 ? cachedTokens : 0;
    const write = cache.write > 0 ? cachedTokens : 0;
    return {
      id: `msg_double_${++counter}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: inputTokens - read - write, output_tokens: outputTokens, cache_creation_input_tokens: write, cache_read_input_tokens: read },
    };
  }

  function sendError(response: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
    sendJson(
      response,
      status,
      { type: 'error', error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message: text } },
      {
        'request-id': `req_double_${counter}`,
        ...headers,
      },
    );
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
    const outputConfig = (body.output_config ?? undefined) as { format?: { type?: unknown; schema?: unknown } } | undefined;
    const schema =
      outputConfig?.format?.type === 'json_schema' && outputConfig.format.schema && typeof outputConfig.format.schema === 'object'
        ? (outputConfig.format.schema as Record<string, unknown>)
        : undefined;
    const { breakpoints, prefix } = cachePrefixOf(body);
    const seen = {
      path,
      headers,
      body,
      model,
      system: typeof body.system === 'string' ? body.system : body.system === undefined ? undefined : textOf(body.system),
      messages,
      tools: Array.isArray(body.tools) ? (body.tools as { name?: unknown }[]).map((tool) => String(tool.name)) : [],
      json: schema !== undefined,
      ...(schema && { schema }),
      cacheBreakpoints: breakpoints,
      maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
      temperature: typeof body.temperature === 'number' ? body.temperature : undefined,
    };
    // Refusals come before the script: the scripted reply is for the request sent again.
    const refusal =
      blind && messages.some((m) => (m.images?.length ?? 0) > 0)
        ? `messages.0.content.0.image: model ${model} does not support image input`
        : body.output_config !== undefined && refusing
          ? 'output_config: Extra inputs are not permitted'
          : schema
            ? anthropicSchemaProblem(schema)?.replace(/^schema/, 'output_config.format.schema')
            : undefined;
    if (!unauthorized && refusal) {
      requests.push({ ...seen, reply: 'refused' });
      sendError(response, 400, refusal);
      return;
    }
    cache = { read: 0, write: 0 };
    if (prefix !== undefined) {
      const known = cached.get(prefix);
      if (known !== undefined) cache = { read: known, write: 0 };
      else {
        const size = roughTokens(prefix);
        cached.set(prefix, size);
        cache = { read: 0, write: size };
      }
    }
    const reply: ScriptedLlmReply | undefined = unauthorized
      ? { kind: 'status', status: 401, message: 'invalid x-api-key' }
      : (replies.shift() ?? options.responder?.(seen));
    requests.push({ ...seen, reply: reply?.kind ?? 'default' });

    const inputTokens = roughTokens(raw);
    switch (reply?.kind) {
      case 'status': {
        sendError(
          response,
          reply.status,
          reply.message ?? `scripted failure ${reply.status}`,
          reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter },
        );
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
        sendJson(
          response,
          200,
          message(
            model,
            [{ type: 'text', text: reply.text }],
            reply.stop === 'max_tokens' ? 'max_tokens' : 'end_turn',
            reply.inputTokens ?? inputTokens,
            reply.outputTokens ?? roughTokens(reply.text),
          ),
        );
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
      cached.clear();
      refusing = options.refuseSchemas ?? false;
    },
    refuseSchemas(on) {
      refusing = on;
    },
    refuseImages(on) {
      blind = on;
    },
    stop() {
      return new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
