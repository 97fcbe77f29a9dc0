/**
 * An OpenAI-compatible transcription server on loopback (`POST /v1/audio/transcriptions`,
 * multipart form data with `file` and `model`, answered `{ "text": "..." }`), as local Whisper
 * servers offer it. The words come from `transcript(bytes)`, so a test decides what each audio
 * file "says"; every request is recorded (the file's name, type and bytes, the model, the
 * Authorization header); `fail(status)` answers the next requests with an error.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenTranscription {
  readonly model: string;
  readonly filename: string;
  readonly mime: string;
  readonly bytes: Buffer;
  readonly authorization?: string;
}

export interface TranscriptionDouble {
  /** Base URL for TRANSCRIPTION_URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly requests: SeenTranscription[];
  /** Answers the next `times` requests with this HTTP status. */
  fail(status: number, times?: number): void;
  stop(): Promise<void>;
}

function readBody(request: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** The parts of a multipart body: name, optional filename and type, and content. */
function parts(body: Buffer, boundary: string): { name: string; filename?: string; type?: string; content: Buffer }[] {
  const out: { name: string; filename?: string; type?: string; content: Buffer }[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    const next = body.indexOf(delimiter, start + delimiter.length);
    if (next === -1) break;
    let part = body.subarray(start + delimiter.length, next);
    if (part.subarray(0, 2).toString() === '\r\n') part = part.subarray(2);
    if (part.subarray(part.length - 2).toString() === '\r\n') part = part.subarray(0, part.length - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const headers = part.subarray(0, headerEnd).toString('utf8');
      const name = /name="([^"]+)"/i.exec(headers)?.[1];
      const filename = /filename="([^"]*)"/i.exec(headers)?.[1];
      const type = /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1];
      if (name) out.push({ name, ...(filename !== undefined && { filename }), ...(type && { type }), content: part.subarray(headerEnd + 4) });
    }
    start = next;
  }
  return out;
}

export async function startTranscriptionDouble(options: { transcript: (audio: Buffer) => string }): Promise<TranscriptionDouble> {
  const requests: SeenTranscription[] = [];
  const failures: number[] = [];
  const server = http.createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const send = (status: number, value: unknown) => {
        const text = JSON.stringify(value);
        response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        response.end(text);
      };
      if (request.method !== 'POST' || request.url !== '/v1/audio/transcriptions') return send(404, { error: { message: 'not found' } });
      const boundary = /boundary=([^;]+)/.exec(String(request.headers['content-type'] ?? ''))?.[1];
      if (!boundary) return send(400, { error: { message: 'expected multipart/form-data' } });
      const fields = parts(body, boundary.replace(/^"|"$/g, ''));
      const file = fields.find((f) => f.name === 'file');
      const model = fields.find((f) => f.name === 'model')?.content.toString('utf8') ?? '';
      if (!file || model === '') return send(400, { error: { message: 'file and model are required' } });
      requests.push({
        model,
        filename: file.filename ?? '',
        mime: file.type ?? '',
        bytes: Buffer.from(file.content),
        ...(request.headers.authorization && { authorization: request.headers.authorization }),
      });
      const status = failures.shift();
      if (status !== undefined) return send(status, { error: { message: `scripted failure ${status}` } });
      send(200, { text: options.transcript(file.content) });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    fail(status, times = 1) {
      for (let i = 0; i < times; i++) failures.push(status);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
