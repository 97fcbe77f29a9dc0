/**
 * The input rules every VectorIndex adapter applies before it touches storage: one scope per
 * operation, non-empty ids, the two kinds, finite vectors of the index's dimension.
 *
 * Why one file: the adapters (sqlite-vec, Qdrant, in memory) must refuse the same inputs with the
 * same error codes, or a caller tested against one adapter would meet different failures on
 * another; a rule written once cannot drift between them.
 */
import { AppError, ValidationError } from '../../shared/errors';
import type { IndexIdentity, VectorRecord, VectorSearch } from '../../memory/vectors/vector-index';

/** Refuses a dimension that is not a whole number from 1 to `max` (the adapter's storage limit). */
export function checkDimension(dimension: unknown, max: number): void {
  if (!Number.isInteger(dimension) || (dimension as number) < 1 || (dimension as number) > max) {
    throw new ValidationError(`A vector dimension must be a whole number from 1 to ${max}, got ${String(dimension)}.`, {
      code: 'vectors.invalid_dimension',
    });
  }
}

/** Refuses anything but a non-empty scope id: a search without a scope could leak other scopes. */
export function checkScope(scopeId: unknown): void {
  if (typeof scopeId !== 'string' || scopeId === '') {
    throw new ValidationError('Every vector operation names one scope (a non-empty scope id).', {
      code: 'vectors.invalid_scope',
    });
  }
}

/** Refuses an empty or non-string id (ids are episode and memory UUIDs). */
export function checkId(id: unknown): void {
  if (typeof id !== 'string' || id === '') {
    throw new ValidationError('A vector id must be a non-empty string.', { code: 'vectors.invalid_id' });
  }
}

/** Refuses a kind other than `episode` or `memory` (callers filter by kind). */
export function checkKind(kind: unknown): void {
  if (kind !== 'episode' && kind !== 'memory') {
    throw new ValidationError(`A vector kind is "episode" or "memory", got ${JSON.stringify(kind)}.`, {
      code: 'vectors.invalid_kind',
    });
  }
}

/**
 * Refuses a vector that is not a Float32Array of `dimension` finite values. A wrong dimension is a
 * system error with a reindex hint, because it means the embedder changed under the index.
 */
export function checkVector(vector: unknown, dimension: number, embedder: string | undefined, what: string): Float32Array {
  if (!(vector instanceof Float32Array)) {
    throw new ValidationError(`${what} must be a Float32Array.`, { code: 'vectors.invalid_vector' });
  }
  if (vector.length !== dimension) {
    const of = embedder ? ` of ${embedder}` : '';
    const holds = `the index holds ${dimension}-dimension vectors${of}`;
    throw new AppError(`${what} has ${vector.length} dimensions; ${holds}.`, {
      code: 'vectors.dimension_mismatch',
      category: 'system',
      hint:
        'The embedder changed since the index was built: run a reindex (setIdentity with the new embedder, ' +
        'then re-embed) before storing or searching its vectors.',
      details: { expected: dimension, received: vector.length },
    });
  }
  for (let i = 0; i < vector.length; i++) {
    if (!Number.isFinite(vector[i]!)) {
      throw new ValidationError(`${what} contains a value that is not a finite number.`, {
        code: 'vectors.invalid_vector',
      });
    }
  }
  return vector;
}

/**
 * Checks a whole batch before anything is written (a batch with one bad record stores nothing)
 * and keeps the last record of each (scope, id): the records an upsert writes, by scope and id.
 * An all-zero vector is refused: it has no direction, so no cosine with it means anything.
 */
export function checkRecords(records: readonly VectorRecord[], dimension: number, embedder: string | undefined): Map<string, VectorRecord> {
  const latest = new Map<string, VectorRecord>();
  for (const record of records) {
    checkScope(record.scopeId);
    checkId(record.id);
    checkKind(record.kind);
    const what = `The vector of ${record.kind} ${record.id}`;
    const vector = checkVector(record.vector, dimension, embedder, what);
    if (hasNoDirection(vector)) {
      throw new ValidationError(`${what} is all zeros; it has no direction to compare.`, {
        code: 'vectors.invalid_vector',
      });
    }
    latest.set(`${record.scopeId}\u0000${record.id}`, record);
  }
  return latest;
}

/** Refuses a search limit that is not a whole number of 0 or more. */
export function checkLimit(limit: unknown): void {
  if (!Number.isInteger(limit) || (limit as number) < 0) {
    throw new ValidationError(`A search limit must be a whole number of 0 or more, got ${String(limit)}.`, {
      code: 'vectors.invalid_limit',
    });
  }
}

/** Thrown when a write is attempted before the index knows which embedder its vectors come from. */
export function identityMissingError(): AppError {
  return new AppError('The vector index has no identity yet.', {
    code: 'vectors.identity_missing',
    category: 'system',
    hint: 'Call setIdentity({ embedder, dimension }) before storing vectors.',
  });
}

/** The message of anything thrown, for error texts that wrap it. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Refuses an identity without an embedder name: the name is what tells two vector spaces apart. */
export function checkIdentityName(embedder: unknown): void {
  if (typeof embedder !== 'string' || embedder.trim() === '') {
    throw new ValidationError('An index identity needs the embedder name.', { code: 'vectors.invalid_identity' });
  }
}

/** Refuses an identity the adapter cannot hold: no embedder name, or a dimension past `maxDimension`. */
export function checkIdentity(next: IndexIdentity, maxDimension: number): void {
  checkIdentityName(next?.embedder);
  checkDimension(next.dimension, maxDimension);
}

/** True when `next` is the identity the index already has: setting it again keeps every vector. */
export function sameIdentity(current: IndexIdentity | null, next: IndexIdentity): boolean {
  return current !== null && current.embedder === next.embedder && current.dimension === next.dimension;
}

/** The checks of a delete or a read by ids: one scope, and every id non-empty. */
export function checkScopeIds(scopeId: unknown, ids: readonly unknown[]): void {
  checkScope(scopeId);
  ids.forEach(checkId);
}

/** The checks of a count (and of a search's filter): one scope, and the kind when one is named. */
export function checkScopeKind(scopeId: unknown, kind: unknown): void {
  checkScope(scopeId);
  if (kind !== undefined) checkKind(kind);
}

/**
 * The checks of a search that come before its vector (which is checked against the identity, when
 * there is one): one scope, the kind when named, a limit of 0 or more.
 */
export function checkSearchInput(query: VectorSearch): void {
  checkScopeKind(query.scopeId, query.kind);
  checkLimit(query.limit);
}

/** An all-zero vector: it has no direction, so it is like nothing and nothing is like it. */
export function hasNoDirection(vector: Float32Array): boolean {
  return vector.every((value) => value === 0);
}

/**
 * The open handle of an adapter (a connection, a client), or the error every method gives after
 * `close()` or before `init()`.
 */
export function requireOpen<T>(closed: boolean, handle: T | null): T {
  checkNotClosed(closed);
  if (handle === null) {
    throw new AppError('The vector index is used before init().', {
      code: 'vectors.not_initialized',
      category: 'system',
      hint: 'Call init() once before any other method.',
    });
  }
  return handle;
}

/** Refuses any use of an index after `close()`, `init()` included: a closed index stays closed. */
export function checkNotClosed(closed: boolean): void {
  if (closed) throw new AppError('The vector index is closed.', { code: 'vectors.closed', category: 'system' });
}
