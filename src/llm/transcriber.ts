/**
 * Speech to text through an OpenAI-compatible transcription server: `POST <url>/v1/audio/transcriptions`
 * as multipart form data (`file`, `model`, `response_format=json`), answered `{ "text": "..." }`.
 * Local Whisper servers (faster-whisper-server, whisper.cpp's server, LocalAI) and OpenAI itself
 * speak it, so one small client covers them all; no SDK is needed for one form post.
 *
 * Failures are {@link LlmError}s like the chat model's, with the server's words cut short and the
 * key (registered as a secret by the configuration) never in them.
 */
import { redactSecrets } from '../shared/redact';
import { LlmError, reasonForStatus, truncate } from './language-model';

export interface TranscriberOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8000` (the path is appended). */
  readonly url: string;
  readonly model: string;
  readonly apiKey?: string;
  /** How long one transcription may take (default {@link TRANSCRIBE_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
}

/** What a voice message is turned into. */
export interface Transcriber {
  /** The words spoken in the audio (trimmed; empty when nothing was said). */
  transcribe(audio: { readonly bytes: Buffer; readonly mime: string; readonly filename: string }): Promise<string>;
}

/** A minute of speech takes a CPU Whisper server well under a minute; a voice message is rarely longer. */
export const TRANSCRIBE_TIMEOUT_MS = 120_000;
const MAX_ERROR_TEXT = 300;

/** The server's answer address: the base URL with the OpenAI path, without doubling `/v1`. */
export function transcriptionEndpoint(url: string): string {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/v1') ? `${base}/audio/transcriptions` : `${base}/v1/audio/transcriptions`;
}

export function createTranscriber(options: TranscriberOptions): Transcriber {
  const endpoint = transcriptionEndpoint(options.url);
  return {
    async transcribe(audio) {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(audio.bytes)], { type: audio.mime }), audio.filename);
      form.append('model', options.model);
      form.append('response_format', 'json');
      let response: Response;
      try {
        response = await fetch(endpoint, {
          method: 'POST',
          body: form,
          headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
          signal: AbortSignal.timeout(options.timeoutMs ?? TRANSCRIBE_TIMEOUT_MS),
        });
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError';
        throw new LlmError(
          timedOut ? 'the transcription server did not answer in time' : `the transcription server could not be reached: ${(error as Error).message}`,
          {
            reason: timedOut ? 'timeout' : 'network',
            model: options.model,
            cause: error,
            hint: 'Check TRANSCRIPTION_URL and that the server is running.',
          },
        );
      }
      const body = await response.text();
      const reason = reasonForStatus(response.status);
      if (reason) {
        throw new LlmError(`the transcription server answered ${response.status}: ${redactSecrets(truncate(body, MAX_ERROR_TEXT))}`, {
          reason,
          model: options.model,
          status: response.status,
        });
      }
      let text: unknown;
      try {
        text = (JSON.parse(body) as { text?: unknown }).text;
      } catch {
        text = undefined;
      }
      if (typeof text !== 'string') {
        throw new LlmError('the transcription server answered without a "text" field', { reason: 'invalid_output', model: options.model });
      }
      return text.trim();
    },
  };
}
