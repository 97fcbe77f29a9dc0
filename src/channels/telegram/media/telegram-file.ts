/**
 * Fetches a file a person sent (a photo, a document, a voice message) from the Bot API: `getFile`
 * for its path, then the download from `<api root>/file/bot<token>/<path>`, into memory only (it
 * is read and let go; nothing is written to disk or the database but what is read from it).
 *
 * The size is checked three times, so a lie at one step costs nothing: the size the message
 * states, the size getFile states, and the bytes actually received (the download is cut off at
 * the cap). The download address holds the bot token, so no error built here names it.
 */
import type { Api } from 'grammy';
import { AppError } from '../../../shared/errors';

/** A file larger than the cap: the reply names both sizes. */
export class FileTooLargeError extends AppError {
  constructor(
    readonly size: number,
    readonly maxBytes: number,
  ) {
    super(`the file is ${size} bytes, over the ${maxBytes}-byte limit`, { code: 'telegram.file_too_large', category: 'user' });
    this.name = 'FileTooLargeError';
  }
}

/** How long a download may take (a 20 MB file over a slow link stays well within it). */
const DOWNLOAD_TIMEOUT_MS = 60_000;

export interface FileSource {
  readonly api: Pick<Api, 'getFile'>;
  readonly apiRoot: string;
  readonly token: string;
}

/** Throws {@link FileTooLargeError} when a stated size is over the cap (before any download). */
export function checkStatedSize(size: number | undefined, maxBytes: number): void {
  if (size !== undefined && size > maxBytes) throw new FileTooLargeError(size, maxBytes);
}

/** The bytes of the file `fileId`, at most `maxBytes` of them. */
export async function downloadFile(source: FileSource, fileId: string, maxBytes: number): Promise<Buffer> {
  const file = await source.api.getFile(fileId);
  checkStatedSize(file.file_size, maxBytes);
  if (!file.file_path) throw new AppError('Telegram gave no path for the file', { code: 'telegram.file_unavailable', category: 'third_party' });
  const url = `${source.apiRoot.replace(/\/+$/, '')}/file/bot${source.token}/${file.file_path}`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  } catch (error) {
    throw new AppError(`the file could not be downloaded from Telegram (${(error as Error).name})`, {
      code: 'telegram.file_unavailable',
      category: 'third_party',
    });
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new AppError(`Telegram answered ${response.status} to the file download`, { code: 'telegram.file_unavailable', category: 'third_party' });
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    received += chunk.length;
    if (received > maxBytes) {
      await response.body.cancel().catch(() => undefined);
      throw new FileTooLargeError(received, maxBytes);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
