/**
 * Turning what the Qdrant client throws into Nocturne's storage errors: no answer, an overloaded
 * or failing server, refused credentials, a collection deleted outside Nocturne, or a request
 * Qdrant rejected, each with a hint naming the setting to check (QDRANT_URL, QDRANT_API_KEY). The
 * server's address is shown without user name or password.
 */
import { AppError, StorageError } from '../../shared/errors';

/** The URL without user name or password, for messages. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(an invalid URL)';
  }
}

export function isAlreadyExists(error: unknown): boolean {
  const status = (error as { status?: unknown })?.status;
  return status === 409 || (status === 400 && /already exists/i.test(JSON.stringify((error as { data?: unknown }).data ?? '')));
}

/** What Qdrant said, from the body of an HTTP error (`{ status: { error } }`) or the error message. */
function reason(error: unknown): string {
  const data = (error as { data?: { status?: { error?: unknown } } })?.data;
  if (typeof data?.status?.error === 'string') return data.status.error;
  return error instanceof Error ? error.message : String(error);
}

export function toVectorError(error: unknown, what: string, where: string): AppError {
  if (error instanceof AppError) return error;
  const status = (error as { status?: unknown })?.status;
  if (typeof status !== 'number' || status >= 500 || status === 429) {
    // No HTTP answer at all (refused, DNS, TLS, timeout), an overloaded or failing server.
    return new StorageError(`Could not ${what}: Qdrant at ${where} is unavailable (${reason(error)}).`, {
      code: 'vectors.unavailable',
      cause: error,
      hint: `Check that Qdrant is running and reachable at QDRANT_URL (${where}), or set VECTOR_STORE=sqlite-vec to use the embedded index.`,
      details: typeof status === 'number' ? { status } : undefined,
    });
  }
  if (status === 401 || status === 403) {
    return new StorageError(`Could not ${what}: Qdrant at ${where} refused the credentials (HTTP ${status}).`, {
      code: 'vectors.unauthorized',
      cause: error,
      hint: 'Check QDRANT_API_KEY against the API key the Qdrant server at QDRANT_URL expects.',
      details: { status },
    });
  }
  if (status === 404) {
    return new StorageError(`Could not ${what}: a Nocturne collection is missing on Qdrant at ${where} (${reason(error)}).`, {
      code: 'vectors.collection_missing',
      cause: error,
      hint: 'The collection was deleted outside Nocturne: run a reindex to recreate and refill it.',
      details: { status },
    });
  }
  return new StorageError(`Could not ${what}: Qdrant at ${where} rejected the request (HTTP ${status}: ${reason(error)}).`, {
    code: 'vectors.rejected',
    cause: error,
    hint: 'Qdrant 1.10 or later is needed; if the identity was changed by another process, restart this one.',
    details: { status },
  });
}
