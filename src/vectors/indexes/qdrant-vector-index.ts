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
import { createHash } from 'node:crypto';
import { QdrantClient } from '@qdrant/js-client-rest';
import { AppError, StorageError, ValidationError } from '../../shared/errors';
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

const FORMAT = 1;
const META_POINT_ID = 1;
const UPSERT_BATCH = 256;
const MAX_DIMENSION = 65536;

/** Creates the adapter; no request is made until {@link VectorIndex.init}. */
export function createQdrantVectorIndex(options: QdrantVectorIndexOptions): VectorIndex {
  const prefix = options.collectionPrefix ?? 'nocturne';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(prefix)) {
    throw new ValidationError(`A Qdrant collection prefix is 1 to 64 letters, digits, "_" or "-", got ${JSON.stringify(prefix)}.`, {
      code: 'vectors.invalid_prefix',
    });
  }
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

  /**
   * Many people in one collection (Qdrant's payload-based multitenancy, issue 18): `scope_id` is
   * a tenant index (`is_tenant`: a scope's points are stored together and read sequentially), and
   * the HNSW graph is built per scope (`payload_m` 16) instead of over the whole collection
   * (`m` 0), so every search, always filtered on one scope, walks that scope's graph only.
   * Applied when a collection is created; docs/deploy.md says how to move an existing one.
   */
  async function ensureCollection(name: string, vectors: { size: number; distance: 'Cosine' | 'Dot' }, indexes: string[], perScope = false): Promise<void> {
    const { exists } = await api().collectionExists(name);
    if (!exists) {
      try {
        await api().createCollection(name, { vectors, ...(perScope && { hnsw_config: { m: 0, payload_m: 16 } }) });
      } catch (error) {
        // Another process may have created it between the check and the creation.
        if (!isAlreadyExists(error)) throw error;
      }
    }
    for (const field of indexes) {
      const tenant = perScope && field === 'scope_id';
      await api().createPayloadIndex(name, { field_name: field, field_schema: tenant ? { type: 'keyword', is_tenant: true } : 'keyword', wait: true });
    }
  }

  async function deleteCollectionIfExists(name: string): Promise<void> {
    const { exists } = await api().collectionExists(name);
    if (exists) await api().deleteCollection(name);
  }

  function requireCollection(): { name: string; identity: IndexIdentity } {
    if (!identity || !collection) throw identityMissingError();
    return { name: collection, identity };
  }

  return {
    init: () =>
      call('open the Qdrant index', async () => {
        checkNotClosed(closed);
        client ??= new QdrantClient({ url: options.url, apiKey: options.apiKey, timeout: options.timeoutMs, checkCompatibility: false });
        await ensureCollection(metaCollection, { size: 1, distance: 'Dot' }, []);
        const [point] = await api().retrieve(metaCollection, { ids: [META_POINT_ID], with_payload: true, with_vector: false });
        const payload = (point?.payload ?? null) as { format?: unknown; embedder?: unknown; dimension?: unknown; collection?: unknown } | null;
        if (payload && (typeof payload.embedder !== 'string' || typeof payload.dimension !== 'number' || typeof payload.collection !== 'string')) {
          throw new StorageError(`The identity point of ${metaCollection} is not one this version wrote.`, {
            code: 'vectors.format_unsupported',
            hint: `Delete the collections named ${prefix}_* on the Qdrant server at QDRANT_URL (${where}) and run a reindex.`,
          });
        }
        identity = payload ? { embedder: payload.embedder as string, dimension: payload.dimension as number } : null;
        collection = payload ? (payload.collection as string) : null;
        return identity;
      }),

    setIdentity: (next) =>
      call('record the index identity', async () => {
        checkIdentity(next, MAX_DIMENSION);
        api();
        const name = collectionName(prefix, next);
        const same = sameIdentity(identity, next);
        if (!same) {
          if (collection) await deleteCollectionIfExists(collection);
          // A collection of that name can be left over from an earlier identity: start empty.
          await deleteCollectionIfExists(name);
        }
        await ensureCollection(name, { size: next.dimension, distance: 'Cosine' }, ['scope_id', 'kind'], true);
        if (!same) {
          await api().upsert(metaCollection, {
            wait: true,
            points: [{ id: META_POINT_ID, vector: [1], payload: { format: FORMAT, embedder: next.embedder, dimension: next.dimension, collection: name } }],
          });
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
        for (let start = 0; start < points.length; start += UPSERT_BATCH) {
          await api().upsert(target.name, { wait: true, points: points.slice(start, start + UPSERT_BATCH) });
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
        if (collection) await deleteCollectionIfExists(collection);
        await api().delete(metaCollection, { wait: true, points: [META_POINT_ID] });
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
        const records: VectorRecord[] = [];
        const unique = [...new Set(ids)];
        for (let start = 0; start < unique.length; start += UPSERT_BATCH) {
          const points = await api().retrieve(collection, {
            ids: unique.slice(start, start + UPSERT_BATCH).map((id) => pointId(scopeId, id)),
            with_payload: ['id', 'kind', 'scope_id'],
            with_vector: true,
          });
          for (const point of points) {
            // Point ids are derived from the scope, but the payload is checked too.
            if (point.payload?.scope_id !== scopeId || !Array.isArray(point.vector)) continue;
            records.push({
              id: String(point.payload.id),
              kind: point.payload.kind as VectorKind,
              scopeId,
              vector: Float32Array.from(point.vector as number[]),
            });
          }
        }
        return records;
      }),

    close: async () => {
      closed = true;
      client = null;
    },
  };
}

/** `${prefix}_${embedder slug}_${dimension}`: readable in the Qdrant dashboard, one per identity. */
function collectionName(prefix: string, identity: IndexIdentity): string {
  const slug =
    identity.embedder
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 80) || 'embedder';
  return `${prefix}_${slug}_${identity.dimension}`;
}

/** A UUID (version 8, "custom") from SHA-256 of scope and id: stable, and distinct per scope. */
function pointId(scopeId: string, id: string): string {
  const bytes = createHash('sha256').update(scopeId).update('\u0000').update(id).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function scopeCondition(scopeId: string) {
  return { key: 'scope_id', match: { value: scopeId } };
}

/** The URL without user name or password, for messages. */
function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(an invalid URL)';
  }
}

function isAlreadyExists(error: unknown): boolean {
  const status = (error as { status?: unknown })?.status;
  return status === 409 || (status === 400 && /already exists/i.test(JSON.stringify((error as { data?: unknown }).data ?? '')));
}

/** What Qdrant said, from the body of an HTTP error (`{ status: { error } }`) or the error message. */
function reason(error: unknown): string {
  const data = (error as { data?: { status?: { error?: unknown } } })?.data;
  if (typeof data?.status?.error === 'string') return data.status.error;
  return error instanceof Error ? error.message : String(error);
}

function toVectorError(error: unknown, what: string, where: string): AppError {
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
