/**
 * The plain HTTP of the webhook listener, on node:http: an error that is an answer (a status and
 * a sentence for the caller), a body read within a size limit, and a JSON answer. Kept apart so
 * that the request's checks (webhook-admission.ts) and the server read as what they decide.
 */
import type http from 'node:http';

/** A refusal with its status: the caller gets `{ error: message, ...extra }`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The request's body; a 413 {@link HttpError} as soon as it is (or says it will be) over `maxBytes`. */
export function readBody(request: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      reject(new HttpError(413, `the body is larger than ${maxBytes} bytes`));
      request.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new HttpError(413, `the body is larger than ${maxBytes} bytes`));
        request.removeAllListeners('data');
        request.resume();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** Answers with `body` as JSON (nothing when an answer was already started). */
export function send(response: http.ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
