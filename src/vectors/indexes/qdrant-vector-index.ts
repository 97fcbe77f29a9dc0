/**
 * The Qdrant VectorIndex, for deployments that already run Qdrant (VECTOR_STORE=qdrant).
 *
 * Layout on the server:
 * - One data collection per identity, named `${prefix}_${embedder as a slug}_${dimension}`, cosine
 *   distance, created when the identity is set. A new identity deletes the old collection and
 *   starts an empty one (the caller then re-embeds), so vectors of two embedders never mix.
 * - Each point carries the payload `{ scope_id, kind, id }`, with keyword payload indexes on
 *   `scope_id` and `kind`. Every search, count and delete sends a `must` filter on `scope_id` (and
 *   on the point ids when deleting by id), so no call can reach another scope.
 * - Point ids are derived from (scope id, record id) — a UUID made of their SHA-256 — rather than
 *   the record's own UUID. Qdrant point ids are unique per collection, so with the bare record id
 *   an upsert naming another scope would silently move that scope's point; with the derived id it
 *   can only ever create or replace a point of its own scope. The record id is kept in the payload.
 * - The identity lives in a small `${prefix}_meta` collection holding one point (id 1, a 1-dimension
 *   dummy vector) whose payload is `{ format, embedder, dimension, collection }`. `init()` reads it;
 *   `clear()` deletes it along with the data collection.
 *
 * The identity is read at `init()` and kept: a reindex started by another process is noticed when
 * this one is restarted (or through the dimension checks Qdrant applies to every write).
 *
 * Needs Qdrant 1.10 or later (the Query API). Network failures, timeouts and 5xx answers become
 * `vectors.unavailable` errors whose hint names QDRANT_URL.
 */
import type { QdrantClient } from '@qdrant/js-client-rest';
import { displayUrl, toVectorError } from './qdrant-errors';
import {
  checkedPrefix,
  collectionName,
  deleteCollectionIfExists,
  deleteIdentityPoint,
  ensureCollection,
  POINT_BATCH,
  pointId,
  readIdentityPoint,
  retrieveVectors,
  scopeCondition,
  writeIdentityPoint,
} from './qdrant-layout';
import {
  checkIdentity,
  checkNotClosed,
  checkRecords,
  checkScope,
  checkScopeIds,
  checkScopeKind,
  checkSearchInput,
  checkVector,
  hasNoDirection,
  identityMissingError,
  requireOpen,
  sameIdentity,
} from './vector-checks';
import type { IndexIdentity, VectorHit, VectorIndex, VectorKind, VectorRecord, VectorSearch } from '../../memory/vectors/vector-index';

export interface QdrantVectorIndexOptions {
  /** REST URL of the server, e.g. `http://127.0.0.1:6333` (QDRANT_URL). */
  readonly url: string;
  /** QDRANT_API_KEY, if the server requires one. */
  readonly apiKey?: string;
  /** Start of every collection name (default `nocturne`); letters, digits, `_` and `-`. */
  readonly collectionPrefix?: string;
  /** Abort a request after this long. */
  readonly timeoutMs: number;
}

const MAX_DIMENSION = 65536;

/** Creates the adapter; no request is made until {@link VectorIndex.init}. */
export function createQdrantVectorIndex(options: QdrantVectorIndexOptions): VectorIndex {
  const prefix = checkedPrefix(options.collectionPrefix ?? 'nocturne');
  const metaCollection = `${prefix}_meta`;
  const where = displayUrl(options.url);

  let client: QdrantClient | null = null;
  let closed = false;
  let identity: IndexIdentity | null = null;
  let collection: string | null = null;

  function api(): QdrantClient {
    return requireOpen(closed, client);
  }

  async function call<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toVectorError(error, what, where);
    }
  }

  function requireCollection(): { name: string; identity: IndexIdentity } {
    if (!identity || !collection) throw identityMissingError();
    return { name: collection, identity };
  }

  return {
    init: () =>
      call('open the Qdrant index', async () => {
        checkNotClosed(closed);
        if (!client) {
          // The client package is loaded here, not with this module: a store on sqlite-vec never loads it.
          const qdrant = await import('@qdrant/js-client-rest');
          client ??= new qdrant.QdrantClient({ url: options.url, apiKey: options.apiKey, timeout: options.timeoutMs, checkCompatibility: false });
        }
        await ensureCollection(api(), metaCollection, { size: 1, distance: 'Dot' }, []);
        const stored = await readIdentityPoint(api(), metaCollection, `the collections named ${prefix}_* on the Qdrant server at QDRANT_URL (${where})`);
        identity = stored?.identity ?? null;
        collection = stored?.collection ?? null;
        return identity;
      }),

    setIdentity: (next) =>
      call('record the index identity', async () => {
        checkIdentity(next, MAX_DIMENSION);
        api();
        const name = collectionName(prefix, next);
        const same = sameIdentity(identity, next);
        if (!same) {
          if (collection) await deleteCollectionIfExists(api(), collection);
          // A collection of that name can be left over from an earlier identity: start empty.
          await deleteCollectionIfExists(api(), name);
        }
        await ensureCollection(api(), name, { size: next.dimension, distance: 'Cosine' }, ['scope_id', 'kind'], true);
        if (!same) {
          await writeIdentityPoint(api(), metaCollection, next, name);
        }
        identity = { embedder: next.embedder, dimension: next.dimension };
        collection = name;
      }),

    upsert: (records) =>
      call('store vectors', async () => {
        api();
        const target = requireCollection();
        const { dimension, embedder } = target.identity;
        const latest = checkRecords(records, dimension, embedder);
        const points = [...latest.values()].map((record) => ({
          id: pointId(record.scopeId, record.id),
          vector: Array.from(record.vector),
          payload: { scope_id: record.scopeId, kind: record.kind, id: record.id },
        }));
        for (let start = 0; start < points.length; start += POINT_BATCH) {
          await api().upsert(target.name, { wait: true, points: points.slice(start, start + POINT_BATCH) });
        }
      }),

    delete: (scopeId, ids) =>
      call('delete vectors', async () => {
        checkScopeIds(scopeId, ids);
        api();
        if (!collection || ids.length === 0) return;
        await api().delete(collection, {
          wait: true,
          filter: { must: [scopeCondition(scopeId), { has_id: [...new Set(ids)].map((id) => pointId(scopeId, id)) }] },
        });
      }),

    deleteScope: (scopeId) =>
      call('delete a scope’s vectors', async () => {
        checkScope(scopeId);
        api();
        if (!collection) return;
        await api().delete(collection, { wait: true, filter: { must: [scopeCondition(scopeId)] } });
      }),

    clear: () =>
      call('clear the vector index', async () => {
        api();
        if (collection) await deleteCollectionIfExists(api(), collection);
        await deleteIdentityPoint(api(), metaCollection);
        identity = null;
        collection = null;
      }),

    search: (query: VectorSearch) =>
      call('search vectors', async (): Promise<VectorHit[]> => {
        checkSearchInput(query);
        api();
        if (!identity || !collection) return [];
        checkVector(query.vector, identity.dimension, identity.embedder, 'The query vector');
        if (query.limit === 0 || hasNoDirection(query.vector)) return [];
        const must = [scopeCondition(query.scopeId), ...(query.kind ? [{ key: 'kind', match: { value: query.kind } }] : [])];
        const { points } = await api().query(collection, {
          query: Array.from(query.vector),
          filter: { must },
          limit: query.limit,
          with_payload: ['id', 'kind', 'scope_id'],
          with_vector: false,
        });
        return points
          .filter((point) => point.payload?.scope_id === query.scopeId)
          .map((point) => ({ id: String(point.payload?.id), kind: point.payload?.kind as VectorKind, score: point.score }));
      }),

    count: (scopeId, kind) =>
      call('count vectors', async () => {
        checkScopeKind(scopeId, kind);
        api();
        if (!collection) return 0;
        const must = [scopeCondition(scopeId), ...(kind ? [{ key: 'kind', match: { value: kind } }] : [])];
        const { count } = await api().count(collection, { filter: { must }, exact: true });
        return count;
      }),

    get: (scopeId, ids) =>
      call('read vectors', async (): Promise<VectorRecord[]> => {
        checkScopeIds(scopeId, ids);
        api();
        if (!collection || ids.length === 0) return [];
        return retrieveVectors(api(), collection, scopeId, ids);
      }),

    close: async () => {
      closed = true;
      client = null;
    },
  };
}
