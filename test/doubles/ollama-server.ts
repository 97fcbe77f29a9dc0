/**
 * A real HTTP server on loopback that speaks enough of Ollama's API (`POST /api/embed`) for the
 * Ollama embedder to be tested end to end, through the real `ollama` client and real sockets.
 *
 * Vectors come from the hash embedder, so similarities are meaningful (shared words score
 * higher). Faults are scripted per request, in order: the next N requests can answer an HTTP
 * error, hang, or return vectors of the wrong size.
 *
 * It also answers `POST /api/chat` (non-streaming) for the Ollama language-model adapter, from
 * its own script of replies ({@link ScriptedLlmReply}: text, tool calls, HTTP errors with
 * `retry-after`, slow answers); chat requests are recorded apart from embedding requests, in
 * `chatRequests`, so the embedding behaviour is unchanged. A schema sent as `format` is recorded;
 * `refuseSchemas` makes it an Ollama older than 0.5, which only knows `format: "json"` and
 * answers a schema with a 400.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashEmbed } from '../../src/vectors/embedders/hash-embedder';
import {
  hang,
  headersOf,
  lastUserText,
  roughTokens,
  type LlmResponder,
  type ScriptedLlmReply,
  type ScriptedToolCall,
  type SeenLlmRequest,
  type SeenMessage,
} from './llm-script';

export type OllamaFault =
  /** Answer normally; lets a script fail the second request but not the first. */
  | { readonly kind: 'pass' }
  /** Answer this status; `body: 'text'` sends a plain-text body, the way a reverse proxy would. */
  | { readonly kind: 'status'; readonly status: number; readonly error?: string; readonly body?: 'json' | 'text' }
  /** Wait this long before answering normally (a client with a shorter timeout gives up first). */
  | { readonly kind: 'hang'; readonly ms: number }
  /** Answer normally, but with vectors of this length. */
  | { readonly kind: 'wrong_dimension'; readonly dimension: number };

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly model?: string;
  readonly inputs: readonly string[];
  /** The fault this request was answered with, if any. */
  readonly fault?: Exclude<OllamaFault['kind'], 'pass'>;
}

export interface OllamaDouble {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Makes the next `times` requests fail with `fault` (queued after faults already scripted). */
  script(fault: OllamaFault, times?: number): void;
  /** Every `/api/chat` request received, in order. */
  readonly chatRequests: SeenLlmRequest[];
  /** Queues `reply` for the next `times` chat requests; with none queued, chat echoes the last user message. */
  scriptChat(reply: ScriptedLlmReply, times?: number): void;
  /** Forgets recorded requests (embedding and chat), any faults or replies not used yet, and the refusal of schemas. */
  reset(): void;
  /** Refuses a schema as `format` with a 400, as Ollama before 0.5 did. */
  refuseSchemas(on: boolean): void;
  stop(): Promise<void>;
}

export interface OllamaDoubleOptions {
  /** Models the server "has"; others answer 404 like a real Ollama without the model pulled. */
  readonly models?: readonly string[];
  readonly dimension?: number;
  /** Chat models the server "has" (default llama3.2); others answer 404. */
  readonly chatModels?: readonly string[];
  /** Answers chat requests when the chat script is empty. */
  readonly responder?: LlmResponder;
  /**
   * A text this model always refuses, like one past its context: an embedding request with any
   * input containing `containing` answers `status` (default 400), every time.
   */
  readonly refuse?: { readonly containing: string; readonly status?: number };
  /** Start refusing schemas as `format` (see {@link OllamaDouble.refuseSchemas}). */
  readonly refuseSchemas?: boolean;
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify(body));
}

/** Starts the double on 127.0.0.1 with a free port. */
export async function startOllamaDouble(doubleOptions: OllamaDoubleOptions = {}): Promise<OllamaDouble> {
  const options = doubleOptions;
  const models = new Set((options.models ?? ['nomic-embed-text']).flatMap((model) => [model, `${model}:latest`]));
  const dimension = options.dimension ?? 768;
  const faults: OllamaFault[] = [];
  const requests: RecordedRequest[] = [];
  const chatModels = new Set((options.chatModels ?? ['llama3.2']).flatMap((model) => [model, `${model}:latest`]));
  const chatReplies: ScriptedLlmReply[] = [];
  const chatRequests: SeenLlmRequest[] = [];
  let refusingSchemas = options.refuseSchemas ?? false;

  /** Ollama's chat messages as neutral ones; the system message is reported apart. */
  function toSeenMessages(messages: unknown): { system?: string; messages: SeenMessage[] } {
    const seen: SeenMessage[] = [];
    let system: string | undefined;
    for (const message of Array.isArray(messages) ? (messages as Record<string, unknown>[]) : []) {
      const text = typeof message.content === 'string' ? message.content : '';
      if (message.role === 'system') system = system === undefined ? text : `${system}\n${text}`;
      else if (message.role === 'tool') seen.push({ role: 'tool', text, toolName: typeof message.tool_name === 'string' ? message.tool_name : undefined });
      else if (message.role === 'assistant') {
        const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[]) : [];
        const toolCalls: ScriptedToolCall[] = calls.map((call) => ({
          name: String(call.function?.name),
          arguments: (call.function?.arguments ?? {}) as Record<string, unknown>,
        }));
        seen.push({ role: 'assistant', text, ...(toolCalls.length > 0 && { toolCalls }) });
      } else {
        const images = Array.isArray(message.images) ? (message.images as unknown[]).map(String) : [];
        seen.push({ role: 'user', text, ...(images.length > 0 && { images }) });
      }
    }
    return { system, messages: seen };
  }

  function chatAnswer(
    model: string,
    content: string,
    extra: { toolCalls?: readonly ScriptedToolCall[]; doneReason?: string; inputTokens: number; outputTokens: number },
  ) {
    return {
      model,
      created_at: new Date().toISOString(),
      message: {
        role: 'assistant',
        content,
        ...(extra.toolCalls && { tool_calls: extra.toolCalls.map((call) => ({ function: { name: call.name, arguments: call.arguments } })) }),
      },
      done: true,
      done_reason: extra.doneReason ?? 'stop',
      total_duration: 1_000_000,
      load_duration: 0,
      prompt_eval_count: extra.inputTokens,
      prompt_eval_duration: 1,
      eval_count: extra.outputTokens,
      eval_duration: 1,
    };
  }

  async function handleChat(raw: string, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      sendJson(response, 400, { error: 'invalid JSON body' });
      return;
    }
    const model = typeof body.model === 'string' ? body.model : undefined;
    const { system, messages } = toSeenMessages(body.messages);
    const options = (body.options ?? {}) as Record<string, unknown>;
    const schema =
      body.format !== null && typeof body.format === 'object' && !Array.isArray(body.format) ? (body.format as Record<string, unknown>) : undefined;
    const seen = {
      path: '/api/chat',
      headers: headersOf(request),
      body,
      model,
      system,
      messages,
      tools: Array.isArray(body.tools) ? (body.tools as { function?: { name?: unknown } }[]).map((tool) => String(tool.function?.name)) : [],
      json: body.format === 'json' || schema !== undefined,
      ...(schema && { schema }),
      maxTokens: typeof options.num_predict === 'number' ? options.num_predict : undefined,
      temperature: typeof options.temperature === 'number' ? options.temperature : undefined,
    };
    if (schema && refusingSchemas) {
      // What Ollama before 0.5 said: its `format` was a string.
      chatRequests.push({ ...seen, reply: 'refused' });
      sendJson(response, 400, { error: 'json: cannot unmarshal object into Go struct field ChatRequest.format of type string' });
      return;
    }
    const reply = chatReplies.shift() ?? doubleOptions.responder?.(seen);
    chatRequests.push({ ...seen, reply: reply?.kind ?? 'default' });
    const inputTokens = roughTokens(raw);
    if (reply?.kind === 'status') {
      sendJson(
        response,
        reply.status,
        { error: reply.message ?? `scripted failure ${reply.status}` },
        reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter },
      );
      return;
    }
    if (reply?.kind === 'hang' && !(await hang(response, reply.ms))) return;
    if (model === undefined || !chatModels.has(model)) {
      sendJson(response, 404, { error: `model "${model}" not found, try pulling it first` });
      return;
    }
    if (reply?.kind === 'text') {
      sendJson(
        response,
        200,
        chatAnswer(model, reply.text, {
          doneReason: reply.stop === 'max_tokens' ? 'length' : 'stop',
          inputTokens: reply.inputTokens ?? inputTokens,
          outputTokens: reply.outputTokens ?? roughTokens(reply.text),
        }),
      );
      return;
    }
    if (reply?.kind === 'tool_use') {
      sendJson(
        response,
        200,
        chatAnswer(model, reply.text ?? '', {
          toolCalls: reply.calls,
          inputTokens: reply.inputTokens ?? inputTokens,
          outputTokens: reply.outputTokens ?? 10 * reply.calls.length,
        }),
      );
      return;
    }
    const text = `echo: ${lastUserText(messages)}`;
    sendJson(response, 200, chatAnswer(model, text, { inputTokens, outputTokens: roughTokens(text) }));
  }

  function embed(inputs: readonly string[], size: number): number[][] {
    return inputs.map((text) => Array.from(hashEmbed(text, size)));
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (request.method === 'POST' && path === '/api/chat') {
      await handleChat(raw, request, response);
      return;
    }
    if (request.method !== 'POST' || path !== '/api/embed') {
      requests.push({ method: request.method ?? '', path, inputs: [] });
      sendJson(response, 404, { error: `${request.method} ${path} is not part of this double` });
      return;
    }
    let body: { model?: unknown; input?: unknown };
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      sendJson(response, 400, { error: 'invalid JSON body' });
      return;
    }
    const model = typeof body.model === 'string' ? body.model : undefined;
    const inputs = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input.map(String) : [];
    const fault = faults.shift();
    requests.push({ method: 'POST', path, model, inputs, fault: fault?.kind === 'pass' ? undefined : fault?.kind });

    if (fault?.kind === 'status') {
      const message = fault.error ?? `scripted failure ${fault.status}`;
      if (fault.body === 'text') {
        response.writeHead(fault.status, { 'content-type': 'text/plain' });
        response.end(message);
      } else {
        sendJson(response, fault.status, { error: message });
      }
      return;
    }
    if (fault?.kind === 'hang') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, fault.ms);
        response.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (response.destroyed || response.writableEnded) return;
    }
    if (model === undefined || !models.has(model)) {
      sendJson(response, 404, { error: `model "${model}" not found, try pulling it first` });
      return;
    }
    const refuse = options.refuse;
    if (refuse && inputs.some((text) => text.includes(refuse.containing))) {
      sendJson(response, refuse.status ?? 400, { error: 'the input length exceeds the context length' });
      return;
    }
    const size = fault?.kind === 'wrong_dimension' ? fault.dimension : dimension;
    sendJson(response, 200, { model, embeddings: embed(inputs, size), total_duration: 1, load_duration: 0, prompt_eval_count: inputs.length });
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: String(error) });
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
    script(fault, times = 1) {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    chatRequests,
    scriptChat(reply, times = 1) {
      for (let i = 0; i < times; i++) chatReplies.push(reply);
    },
    reset() {
      faults.length = 0;
      requests.length = 0;
      chatReplies.length = 0;
      chatRequests.length = 0;
      refusingSchemas = options.refuseSchemas ?? false;
    },
    refuseSchemas(on) {
      refusingSchemas = on;
    },
    stop() {
      return new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
