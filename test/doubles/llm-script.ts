/**
 * What the loopback model servers (Anthropic, Ollama) share: a provider-neutral script of
 * replies, and a provider-neutral record of what each chat request asked for. Each double
 * translates the script into its own wire format and its wire format back into the record, so a
 * contract test can be written once for both providers.
 */
import type http from 'node:http';

export interface ScriptedToolCall {
  /** Anthropic needs one; the Ollama double leaves it out, like older Ollama servers. */
  readonly id?: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

export type ScriptedLlmReply =
  /** A text answer; `stop: 'max_tokens'` says it was cut off. */
  | { readonly kind: 'text'; readonly text: string; readonly inputTokens?: number; readonly outputTokens?: number; readonly stop?: 'end' | 'max_tokens' }
  /** The model calls tools (optionally saying something first). */
  | {
      readonly kind: 'tool_use';
      readonly calls: readonly ScriptedToolCall[];
      readonly text?: string;
      readonly inputTokens?: number;
      readonly outputTokens?: number;
    }
  /** An HTTP error in the provider's error shape; `retryAfter` is sent as the `retry-after` header. */
  | { readonly kind: 'status'; readonly status: number; readonly message?: string; readonly retryAfter?: string }
  /** Waits this long (or until the client gives up), then answers with the next default text. */
  | { readonly kind: 'hang'; readonly ms: number };

export interface SeenMessage {
  readonly role: 'user' | 'assistant' | 'tool';
  readonly text: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** For `tool` messages: the call answered (Anthropic's tool_use_id). */
  readonly toolCallId?: string;
  /** For `tool` messages: the tool's name (Ollama's tool_name). */
  readonly toolName?: string;
  /** Pictures shown with a user turn, base64 (Anthropic image blocks, Ollama `images`). */
  readonly images?: readonly string[];
}

/**
 * Answers a request when no scripted reply is queued (e.g. a model that answers from what the
 * prompt shows); returning undefined falls back to the echo.
 */
export type LlmResponder = (request: Omit<SeenLlmRequest, 'reply'>) => ScriptedLlmReply | undefined;

/** One chat request as the double understood it, plus the raw wire data. */
export interface SeenLlmRequest {
  readonly path: string;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Record<string, unknown>;
  readonly model?: string;
  readonly system?: string;
  readonly messages: readonly SeenMessage[];
  readonly tools: readonly string[];
  /**
   * Whether the wire asked for JSON output: Ollama `format` ("json" or a schema); Anthropic only
   * with a schema (`output_config.format`), otherwise it has no such flag.
   */
  readonly json: boolean;
  /** The answer's JSON Schema, when the request sent one (Anthropic `output_config.format.schema`, Ollama `format`). */
  readonly schema?: Record<string, unknown>;
  /** Anthropic: how many `cache_control` breakpoints the request carried (system blocks, tools, messages). */
  readonly cacheBreakpoints?: number;
  readonly maxTokens?: number;
  readonly temperature?: number;
  /** How the double answered; `refused` when it refused the answer schema (the script was left as it was). */
  readonly reply: ScriptedLlmReply['kind'] | 'default' | 'refused';
}

export function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export function sendJson(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify(body));
}

/** Waits `ms`, or less when the client hangs up; true when the client is still there. */
export async function hang(response: http.ServerResponse, ms: number): Promise<boolean> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    response.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return !(response.destroyed || response.writableEnded);
}

/** The header a client authenticated with: `x-api-key`, or a bearer token. */
export function credentialOf(headers: Readonly<Record<string, string>>): string | undefined {
  return headers['x-api-key'] ?? /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
}

export function headersOf(request: http.IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A rough token count for replies that do not script one. */
export function roughTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The text the default reply echoes: the last user message. */
export function lastUserText(messages: readonly SeenMessage[]): string {
  return [...messages].reverse().find((message) => message.role === 'user')?.text ?? '';
}

/**
 * A heavy but valid consolidation answer to a consolidation prompt: a memory, an importance and
 * an entity observation per user turn (the crash tests need an apply that takes a while).
 */
export function heavyConsolidationAnswer(prompt: string): string {
  const users = [...prompt.matchAll(/^E(\d+) \S+ \S+ user[^:]*: (.*)$/gm)].map((m) => ({ n: Number(m[1]), text: m[2]! }));
  return JSON.stringify({
    new: users.map((u) => ({ category: 'fact', content: `The user mentioned ${u.text}`, confidence: 0.8, source: 'stated', episodes: [`E${u.n}`] })),
    importance: users.map((u) => ({ episode: `E${u.n}`, score: 0.5 })),
    entities: users.slice(0, 20).map((u) => ({ name: `Friend ${u.n}`, kind: 'person', observations: [`met on turn ${u.n}`], episodes: [`E${u.n}`] })),
  });
}

/**
 * A small valid consolidation answer for a prompt: each of the person's turns saying "I really
 * like X" (at most five) becomes a preference memory citing its E-id, and every user turn gets a
 * low importance. Load and replica tests use it so sleep learns something real at once.
 */
export function likesPlan(prompt: string): ScriptedLlmReply {
  const users = [...prompt.matchAll(/^E(\d+) \S+ \S+ user[^:]*: (.*)$/gm)];
  const likes = users.filter((m) => /I really like/.test(m[2]!)).slice(0, 5);
  return {
    kind: 'text',
    text: JSON.stringify({
      new: likes.map((m) => ({
        category: 'preference',
        content: `The user likes ${/I really like ([^.]+)/.exec(m[2]!)![1]!.trim()}`,
        confidence: 0.8,
        source: 'stated',
        episodes: [`E${m[1]}`],
      })),
      importance: users.map((m) => ({ episode: `E${m[1]}`, score: 0.3 })),
    }),
  };
}

/**
 * A consolidation answer that follows the prompt's wording about people: each person's turn
 * saying "I am X" or "I have X" becomes a fact about its speaker. A group's prompt names the
 * speaker on each line (`user (Ana, speaker 1001)`) and asks for memories by name, so the fact
 * reads "Ana is X"; a private chat's reads "The user is X". `ignoreNames` answers like a model
 * that skipped the group's instruction ("The user is X" everywhere), which the memory writer
 * must still store about the speaker.
 */
export function speakerFactsPlan(prompt: string, options: { readonly ignoreNames?: boolean } = {}): ScriptedLlmReply {
  const group = prompt.includes('## A group chat') && options.ignoreNames !== true;
  const users = [...prompt.matchAll(/^E(\d+) \S+ \S+ user(?: \(([^,)]+)(?:, speaker [^)]+)?\))?: (.*)$/gm)];
  const facts = users.flatMap((m) => {
    const said = /^I (am|have) ([^.!]+)/i.exec(m[3]!.trim());
    if (!said) return [];
    const verb = said[1]!.toLowerCase() === 'am' ? 'is' : 'has';
    const who = group && m[2] ? m[2] : 'The user';
    return [{ category: 'fact', content: `${who} ${verb} ${said[2]!.trim()}`, confidence: 0.9, source: 'stated', episodes: [`E${m[1]}`] }];
  });
  return {
    kind: 'text',
    text: JSON.stringify(facts.length > 0 ? { new: facts, importance: users.map((m) => ({ episode: `E${m[1]}`, score: 0.5 })) } : { nothing: 'small talk' }),
  };
}
