/**
 * A VectorIndex kept in process memory: exact, dependency-free, gone on exit. Shipped beside the
 * port the way grammY ships MemorySessionStorage: for tests, evaluations and small tools.
 *
 * It passes the same contract as the sqlite-vec and Qdrant adapters (and applies the same input
 * checks, from `vector-checks.ts`), so code tested against it meets the same refusals in
 * production: no writes before an identity, no vectors of another dimension, a batch with one bad
 * record stores nothing.
 */
import { dot, norm } from './float-vectors';
import {
  checkIdentity,
  checkRecords,
  checkScope,
  checkScopeIds,
  checkScopeKind,
  checkSearchInput,
  checkVector,
  identityMissingError,
  sameIdentity,
} from './vector-checks';
import type { IndexIdentity, VectorHit, VectorIndex, VectorKind, VectorRecord } from '../../memory/vectors/vector-index';

/** No storage limit applies in memory; this only refuses nonsense (the largest Qdrant accepts). */
const MAX_DIMENSION = 65_536;

/**
 * What in-memory indexes created on it share, the way processes share one vectors.db: the
 * identity and the vectors (scope -> id -> record).
 */
export interface InMemoryVectorStorage {
  identity: IndexIdentity | null;
  readonly scopes: Map<string, Map<string, VectorRecord>>;
}

/** Empty storage for one or more in-memory indexes. */
export function createInMemoryVectorStorage(): InMemoryVectorStorage {
  return { identity: null, scopes: new Map() };
}

/** Creates an index on `storage` (by default storage of its own). */
export function createInMemoryVectorIndex(options: { storage?: InMemoryVectorStorage } = {}): VectorIndex {
  const storage = options.storage ?? createInMemoryVectorStorage();
  const { scopes } = storage;

  function requireIdentity(): IndexIdentity {
    if (!storage.identity) throw identityMissingError();
    return storage.identity;
  }

  /** A copy, so a caller reusing its array cannot change a stored vector. */
  function copy(record: VectorRecord): VectorRecord {
    return { id: record.id, kind: record.kind, scopeId: record.scopeId, vector: Float32Array.from(record.vector) };
  }

  return {
    init: async () => storage.identity,

    async setIdentity(next) {
      checkIdentity(next, MAX_DIMENSION);
      if (sameIdentity(storage.identity, next)) return;
      scopes.clear();
      storage.identity = { embedder: next.embedder, dimension: next.dimension };
    },

    async upsert(records) {
      const { embedder, dimension } = requireIdentity();
      for (const record of checkRecords(records, dimension, embedder).values()) {
        let scope = scopes.get(record.scopeId);
        if (!scope) scopes.set(record.scopeId, (scope = new Map()));
        scope.set(record.id, copy(record));
      }
    },

    async delete(scopeId, ids) {
      checkScopeIds(scopeId, ids);
      const scope = scopes.get(scopeId);
      for (const id of ids) scope?.delete(id);
    },

    async deleteScope(scopeId) {
      checkScope(scopeId);
      scopes.delete(scopeId);
    },

    async clear() {
      scopes.clear();
      storage.identity = null;
    },

    async search(query) {
      checkSearchInput(query);
      const { scopeId, vector, limit, kind } = query;
      const identity = storage.identity;
      if (!identity) return [];
      checkVector(vector, identity.dimension, identity.embedder, 'The query vector');
      const queryNorm = norm(vector);
      if (limit === 0 || queryNorm === 0) return [];
      const hits: VectorHit[] = [];
      for (const record of scopes.get(scopeId)?.values() ?? []) {
        if (kind && record.kind !== kind) continue;
        const score = dot(vector, record.vector) / (queryNorm * norm(record.vector));
        hits.push({ id: record.id, kind: record.kind, score });
      }
      return hits.sort((a, b) => b.score - a.score).slice(0, limit);
    },

    async count(scopeId, kind?: VectorKind) {
      checkScopeKind(scopeId, kind);
      let n = 0;
      for (const record of scopes.get(scopeId)?.values() ?? []) if (!kind || record.kind === kind) n += 1;
      return n;
    },

    async get(scopeId, ids) {
      checkScopeIds(scopeId, ids);
      const scope = scopes.get(scopeId);
      return [...new Set(ids)].flatMap((id) => {
        const record = scope?.get(id);
        return record ? [copy(record)] : [];
      });
    },

    close: async () => undefined,
  };
}
