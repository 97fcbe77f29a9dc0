/**
 * The error family of Nocturne.
 *
 * Every failure that crosses a boundary (config, storage, a vendor SDK, user input) becomes an
 * {@link AppError} with a stable `code` that tests and operators can match on, a `category` that
 * says whose move it is, and the original error kept as the native `cause`. Messages never carry
 * secrets: they pass through {@link redactSecrets} when they are built.
 */
import { redactSecrets } from './redact';

/** Who has to act: the person (bad input), the operator (our system), or a third party. */
export type ErrorCategory = 'user' | 'system' | 'third_party';

export interface AppErrorOptions {
  readonly code: string;
  readonly category: ErrorCategory;
  /** What the reader can do about it; printed under the message by the CLI. */
  readonly hint?: string;
  readonly cause?: unknown;
  /** Extra structured facts for logs (never secrets). */
  readonly details?: Record<string, unknown>;
}

export class AppError extends Error {
  /** Stable machine-readable code, e.g. `episode.empty` or `config.invalid`. */
  readonly code: string;
  readonly category: ErrorCategory;
  readonly hint?: string;
  readonly details?: Record<string, unknown>;

  constructor(message: string, options: AppErrorOptions) {
    super(redactSecrets(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = options.code;
    this.category = options.category;
    this.hint = options.hint === undefined ? undefined : redactSecrets(options.hint);
    this.details = options.details;
  }
}

/** Input a person or a file gave us was not acceptable; nothing was stored. */
export class ValidationError extends AppError {
  constructor(message: string, options: Omit<AppErrorOptions, 'category'>) {
    super(message, { ...options, category: 'user' });
    this.name = 'ValidationError';
  }
}

/** A lookup found nothing in the caller's scope (never says whether it exists elsewhere). */
export class NotFoundError extends AppError {
  constructor(message: string, options: Omit<AppErrorOptions, 'category' | 'code'> & { code?: string } = {}) {
    super(message, { code: 'not_found', ...options, category: 'user' });
    this.name = 'NotFoundError';
  }
}

/** The database or a migration failed; the operator has to look. */
export class StorageError extends AppError {
  constructor(message: string, options: Omit<AppErrorOptions, 'category'>) {
    super(message, { ...options, category: 'system' });
    this.name = 'StorageError';
  }
}
