/**
 * A VectorIndex kept in process memory: exact, dependency-free, gone on exit. Shipped beside the
 * port the way grammY ships MemorySessionStorage: for tests, evaluations and small tools.
 */
import { StorageError } from '../../shared/errors';
import { dot } from '../embeddings/embedder';
import type { IndexIdentity, VectorHit, VectorIndex, VectorKind, VectorRecord } from './vector-index';

export function createInMemoryVectorIndex(): VectorIndex {
  let identity: IndexIdentity | null = null;
  /** scope -> id -> record */
  const scopes = new Map<string, Map<string, VectorRecord>>();

  function checkDimension(vector: Float32Array): void {
    if (identity && vector.length !== identity.dimension) {
      throw new StorageError(`vector has ${vector.length} dimensions; the index holds ${identity.dimension}`, { code: 'vectors.dimension_mismatch' });
    }
  }

  return {
    init: async () => identity,
    async setIdentity(next) {
      if (!identity || identity.dimension !== next.dimension || identity.embedder !== next.embedder) scopes.clear();
      identity = next;
    },
    async upsert(records) {
      for (const record of records) {
        checkDimension(record.vector);
        let scope = scopes.get(record.scopeId);
        if (!scope) scopes.set(record.scopeId, (scope = new Map()));
        scope.set(record.id, { ...record, vector: Float32Array.from(record.vector) });
      }
    },
    async delete(scopeId, ids) {
      const scope = scopes.get(scopeId);
      for (const id of ids) scope?.delete(id);
    },
    async deleteScope(scopeId) {
      scopes.delete(scopeId);
    },
    async clear() {
      scopes.clear();
      identity = null;
    },
    async search({ scopeId, vector, limit, kind }) {
      checkDimension(vector);
      const hits: VectorHit[] = [];
      for (const record of scopes.get(scopeId)?.values() ?? []) {
        if (kind && record.kind !== kind) continue;
        hits.push({ id: record.id, kind: record.kind, score: dot(vector, record.vector) });
      }
      return hits.sort((a, b) => b.score - a.score).slice(0, limit);
    },
    async count(scopeId, kind?: VectorKind) {
      let n = 0;
      for (const record of scopes.get(scopeId)?.values() ?? []) if (!kind || record.kind === kind) n += 1;
      return n;
    },
    async get(scopeId, ids) {
      const scope = scopes.get(scopeId);
      return [...new Set(ids)].flatMap((id) => {
        const record = scope?.get(id);
        return record ? [{ ...record, vector: Float32Array.from(record.vector) }] : [];
      });
    },
    close: async () => undefined,
  };
}
