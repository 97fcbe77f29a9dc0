/**
 * What a failed call to Ollama's `/api/embed` means: whether another attempt could succeed (a
 * timeout, a network error, 429, 5xx) or not (a model never pulled, a request Ollama rejects), as
 * an AppError with a code and a hint saying what to do. Kept apart from the embedder, which only
 * acts on the verdict (retry with backoff, or fail at once).
 */
import { AppError } from '../../shared/errors';
import { errorNames, ollamaStatusOf } from '../../shared/ollama-errors';

/** Why one attempt failed, and whether another attempt could succeed. */
export interface AttemptFailure {
  readonly retryable: boolean;
  readonly error: AppError;
}

/** The call that failed: the model, the server, the timeout it had, and how many texts it carried. */
export interface EmbedCall {
  readonly model: string;
  readonly host: string;
  readonly timeoutMs: number;
  readonly batch: number;
}

/** The verdict on one failed attempt, with the error the embedder throws (or logs before a retry). */
export function classifyEmbedFailure(error: unknown, call: EmbedCall): AttemptFailure {
  const { model, host, timeoutMs } = call;
  const details = { model, batch: call.batch };
  const status = ollamaStatusOf(error);
  const reason = (error as Error)?.message ?? String(error);
  if (status === 404) {
    return {
      retryable: false,
      error: new AppError(`Ollama has no model "${model}": ${reason}`, {
        code: 'embedder.model_not_found',
        category: 'third_party',
        cause: error,
        details: { ...details, status },
        hint: `Run \`ollama pull ${model}\` on the Ollama machine, or choose a model it has (\`ollama list\`).`,
      }),
    };
  }
  if (status !== undefined) {
    const transient = status === 429 || status >= 500;
    return {
      retryable: transient,
      error: new AppError(`Ollama answered ${status} to an embedding request for "${model}": ${reason}`, {
        code: 'embedder.failed',
        category: 'third_party',
        cause: error,
        details: { ...details, status },
        hint: transient
          ? 'Ollama is overloaded or failing; check its logs (`ollama serve` output) and try again.'
          : 'Ollama rejected the request; check that the model is an embedding model and that Ollama is up to date.',
      }),
    };
  }
  const names = errorNames(error);
  if (names.includes('TimeoutError')) {
    return {
      retryable: true,
      error: new AppError(`Ollama at ${host} did not answer an embedding request for "${model}" within ${timeoutMs} ms`, {
        code: 'embedder.timeout',
        category: 'third_party',
        cause: error,
        details: { ...details, timeoutMs },
        hint: 'Ollama may still be loading the model or be overloaded; check it is running, or raise the timeout.',
      }),
    };
  }
  const network = (names[0] === 'TypeError' && names.length > 1) || names.some((name) => /^E[A-Z_]+$/.test(name));
  const cause = (error as { cause?: { message?: unknown } } | null)?.cause?.message;
  if (network) {
    return {
      retryable: true,
      error: new AppError(`Cannot reach Ollama at ${host} for embeddings: ${reason}${typeof cause === 'string' ? ` (${cause})` : ''}`, {
        code: 'embedder.unreachable',
        category: 'third_party',
        cause: error,
        details,
        hint: 'Start Ollama (`ollama serve`) or point OLLAMA_HOST at a running server.',
      }),
    };
  }
  return {
    retryable: false,
    error: new AppError(`Embedding with Ollama failed: ${reason}`, { code: 'embedder.failed', category: 'third_party', cause: error, details }),
  };
}
