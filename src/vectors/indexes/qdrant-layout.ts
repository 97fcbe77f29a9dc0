/**
 * The layout of Nocturne's vectors on a Qdrant server (qdrant-vector-index.ts describes it): the
 * collection names, the point ids derived from scope and record, the scope filter, creating and
 * deleting collections with their payload indexes, and reading a scope's vectors back by id.
 */
import { createHash } from 'node:crypto';
import type { QdrantClient } from '@qdrant/js-client-rest';
import type { IndexIdentity, VectorKind, VectorRecord } from '../../memory/vectors/vector-index';
import { StorageError, ValidationError } from '../../shared/errors';
import { isAlreadyExists } from './qdrant-errors';

/** Points per upsert or retrieve request. */
export const POINT_BATCH = 256;
/** The version of the identity point's payload. */
const FORMAT = 1;
/** The one point of the meta collection. */
const META_POINT_ID = 1;

/** The identity the meta collection records, and the data collection it names; null when none is set. */
export async function readIdentityPoint(
  client: QdrantClient,
  metaCollection: string,
  whatToDelete: string,
): Promise<{ identity: IndexIdentity; collection: string } | null> {
  const [point] = await client.retrieve(metaCollection, { ids: [META_POINT_ID], with_payload: true, with_vector: false });
  const payload = (point?.payload ?? null) as { format?: unknown; embedder?: unknown; dimension?: unknown; collection?: unknown } | null;
  if (!payload) return null;
  if (typeof payload.embedder !== 'string' || typeof payload.dimension !== 'number' || typeof payload.collection !== 'string') {
    throw new StorageError(`The identity point of ${metaCollection} is not one this version wrote.`, {
      code: 'vectors.format_unsupported',
      hint: `Delete ${whatToDelete} and run a reindex.`,
    });
  }
  return { identity: { embedder: payload.embedder, dimension: payload.dimension }, collection: payload.collection };
}

/** Records a new identity and the data collection that holds its vectors. */
export async function writeIdentityPoint(client: QdrantClient, metaCollection: string, identity: IndexIdentity, collection: string): Promise<void> {
  await client.upsert(metaCollection, {
    wait: true,
    points: [{ id: META_POINT_ID, vector: [1], payload: { format: FORMAT, embedder: identity.embedder, dimension: identity.dimension, collection } }],
  });
}

/** Forgets the identity (the index is cleared). */
export async function deleteIdentityPoint(client: QdrantClient, metaCollection: string): Promise<void> {
  await client.delete(metaCollection, { wait: true, points: [META_POINT_ID] });
}

/**
 * Many people in one collection (Qdrant's payload-based multitenancy, issue 18): `scope_id` is
 * a tenant index (`is_tenant`: a scope's points are stored together and read sequentially), and
 * the HNSW graph is built per scope (`payload_m` 16) instead of over the whole collection
 * (`m` 0), so every search, always filtered on one scope, walks that scope's graph only.
 * Applied when a collection is created; docs/deploy.md says how to move an existing one.
 */
export async function ensureCollection(
  client: QdrantClient,
  name: string,
  vectors: { size: number; distance: 'Cosine' | 'Dot' },
  indexes: string[],
  perScope = false,
): Promise<void> {
  const { exists } = await client.collectionExists(name);
  if (!exists) {
    try {
      await client.createCollection(name, { vectors, ...(perScope && { hnsw_config: { m: 0, payload_m: 16 } }) });
    } catch (error) {
      // Another process may have created it between the check and the creation.
      if (!isAlreadyExists(error)) throw error;
    }
  }
  for (const field of indexes) {
    const tenant = perScope && field === 'scope_id';
    await client.createPayloadIndex(name, { field_name: field, field_schema: tenant ? { type: 'keyword', is_tenant: true } : 'keyword', wait: true });
  }
}

/** Deletes a collection when it is there (a new identity starts empty). */
export async function deleteCollectionIfExists(client: QdrantClient, name: string): Promise<void> {
  const { exists } = await client.collectionExists(name);
  if (exists) await client.deleteCollection(name);
}

/** The start of every collection name, refused unless 1 to 64 letters, digits, `_` or `-`. */
export function checkedPrefix(prefix: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(prefix)) {
    throw new ValidationError(`A Qdrant collection prefix is 1 to 64 letters, digits, "_" or "-", got ${JSON.stringify(prefix)}.`, {
      code: 'vectors.invalid_prefix',
    });
  }
  return prefix;
}

/** `${prefix}_${embedder slug}_${dimension}`: readable in the Qdrant dashboard, one per identity. */
export function collectionName(prefix: string, identity: IndexIdentity): string {
  const slug =
    identity.embedder
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 80) || 'embedder';
  return `${prefix}_${slug}_${identity.dimension}`;
}

/** A UUID (version 8, "custom") from SHA-256 of scope and id: stable, and distinct per scope. */
export function pointId(scopeId: string, id: string): string {
  const bytes = createHash('sha256').update(scopeId).update('\u0000').update(id).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The filter condition every search, count and delete carries: this scope's points only. */
export function scopeCondition(scopeId: string) {
  return { key: 'scope_id', match: { value: scopeId } };
}

/** The vectors of these records of one scope (those it has; the payload's scope checked too). */
export async function retrieveVectors(client: QdrantClient, collection: string, scopeId: string, ids: readonly string[]): Promise<VectorRecord[]> {
  const records: VectorRecord[] = [];
  const unique = [...new Set(ids)];
  for (let start = 0; start < unique.length; start += POINT_BATCH) {
    const points = await client.retrieve(collection, {
      ids: unique.slice(start, start + POINT_BATCH).map((id) => pointId(scopeId, id)),
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
}
