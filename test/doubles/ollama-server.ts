/**
 * A real HTTP server on loopback that speaks enough of Ollama's API (`POST /api/embed`) for the
 * Ollama embedder to be tested end to end, through the real `ollama` client and real sockets.
 *
 * Vectors come from the hash embedder, so similarities are meaningful (shared words score
 * higher). Faults are scripted per request, in order: the next N requests can answer an HTTP
 * error, hang, or return vectors of the wrong size.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashEmbed } from '../../src/memory/embeddings/hash-embedder';

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
  /** Forgets recorded requests and any faults not used yet. */
  reset(): void;
  stop(): Promise<void>;
}

export interface OllamaDoubleOptions {
  /** Models the server "has"; others answer 404 like a real Ollama without the model pulled. */
  readonly models?: readonly string[];
  readonly dimension?: number;
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(body));
}

/** Starts the double on 127.0.0.1 with a free port. */
export async function startOllamaDouble(options: OllamaDoubleOptions = {}): Promise<OllamaDouble> {
  const models = new Set((options.models ?? ['nomic-embed-text']).flatMap((model) => [model, `${model}:latest`]));
  const dimension = options.dimension ?? 768;
  const faults: OllamaFault[] = [];
  const requests: RecordedRequest[] = [];

  function embed(inputs: readonly string[], size: number): number[][] {
    return inputs.map((text) => Array.from(hashEmbed(text, size)));
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
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
    reset() {
      faults.length = 0;
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
