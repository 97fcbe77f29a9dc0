/**
 * Chooses the configured VectorIndex adapter through a typed registry.
 */
import type { Config } from '../../config/load-config';
import { createQdrantVectorIndex } from './qdrant-vector-index';
import { createSqliteVecVectorIndex } from './sqlite-vec-vector-index';
import type { VectorIndex } from '../../memory/vectors/vector-index';

type VectorConfig = Config['vectors'];

const indexes = {
  'sqlite-vec': (config: VectorConfig, dimension: number) => {
    const { file, encryptionKey, scanMemoryBytes } = config as Extract<VectorConfig, { store: 'sqlite-vec' }>;
    return createSqliteVecVectorIndex({ file, encryptionKey, dimension, scanMemoryBytes });
  },
  qdrant: (config: VectorConfig) => {
    const qdrant = config as Extract<VectorConfig, { store: 'qdrant' }>;
    return createQdrantVectorIndex({ url: qdrant.url, apiKey: qdrant.apiKey, timeoutMs: 10_000 });
  },
} satisfies Record<VectorConfig['store'], (config: VectorConfig, dimension: number) => VectorIndex>;

/** Creates the configured vector index for vectors of `dimension`; call `init()` (through the guard) before use. */
export function createVectorIndex(config: VectorConfig, dimension: number): VectorIndex {
  return indexes[config.store](config, dimension);
}
