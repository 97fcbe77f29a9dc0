/**
 * The in-memory VectorIndex passes the same contract as the sqlite-vec and Qdrant adapters, so the
 * tests and evaluations that use it see what production sees. Its "storage" is a shared object:
 * every instance created on it sees the same vectors and identity, like processes on one file.
 */
import { createInMemoryVectorIndex, createInMemoryVectorStorage } from '../../../../src/vectors/indexes/in-memory-vector-index';
import { describeVectorIndexContract } from '../../../contracts/vector-index-contract';

const storage = createInMemoryVectorStorage();

describeVectorIndexContract({
  name: 'in memory',
  create: async () => createInMemoryVectorIndex({ storage }),
  destroy: async (index) => index.clear(),
});
