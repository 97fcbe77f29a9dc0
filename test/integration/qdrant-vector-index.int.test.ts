/**
 * The VectorIndex contract against a real Qdrant server, named by NOCTURNE_TEST_QDRANT_URL (and
 * NOCTURNE_TEST_QDRANT_API_KEY if it needs one). Without it the contract is reported as skipped: a
 * loopback imitation of Qdrant would only test the imitation. What needs no server (a refused
 * connection, bad options) is checked always.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { QdrantClient } from '@qdrant/js-client-rest';
import { createQdrantVectorIndex } from '../../src/vectors/indexes/qdrant-vector-index';
import { describeVectorIndexContract } from '../contracts/vector-index-contract';

const url = process.env.NOCTURNE_TEST_QDRANT_URL;
const apiKey = process.env.NOCTURNE_TEST_QDRANT_API_KEY;
// Collections of this run only; destroy() removes them.
const collectionPrefix = `nocturne_test_${randomUUID().slice(0, 8)}`;

describeVectorIndexContract({
  name: 'Qdrant (real server)',
  skip: () => (url ? undefined : 'no Qdrant server: set NOCTURNE_TEST_QDRANT_URL to run against a real one'),
  create: async () => createQdrantVectorIndex({ url: url!, apiKey, collectionPrefix, timeoutMs: 10_000 }),
  destroy: async () => {
    const client = new QdrantClient({ url: url!, apiKey, checkCompatibility: false });
    const { collections } = await client.getCollections();
    for (const { name } of collections) if (name.startsWith(`${collectionPrefix}_`)) await client.deleteCollection(name);
  },
});

/** A loopback port nothing listens on (taken from the OS, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Qdrant vector index without a server', () => {
  it('turns a refused connection into vectors.unavailable with a hint naming QDRANT_URL', async () => {
    const port = await closedPort();
    const index = createQdrantVectorIndex({ url: `http://user:secret@127.0.0.1:${port}`, timeoutMs: 2_000 });
    const error = await index.init().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'vectors.unavailable', category: 'system', hint: expect.stringContaining('QDRANT_URL') });
    expect(String((error as Error).message)).not.toContain('secret');
    await index.close();
  });

  it('refuses a collection prefix Qdrant could not name collections with, and use before init()', async () => {
    expect(() => createQdrantVectorIndex({ url: 'http://127.0.0.1:6333', collectionPrefix: 'no spaces/please', timeoutMs: 1_000 })).toThrow(
      expect.objectContaining({ code: 'vectors.invalid_prefix' }),
    );
    const index = createQdrantVectorIndex({ url: 'http://127.0.0.1:6333', timeoutMs: 1_000 });
    await expect(index.count('scope')).rejects.toMatchObject({ code: 'vectors.not_initialized' });
  });
});
