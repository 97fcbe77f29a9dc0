import { describeStorageContract } from '../contracts/storage-contract';
import { postgresAvailable, postgresDatabase, postgresSkipReason } from '../support/databases';

describeStorageContract({
  name: 'PostgreSQL (pg, real server)',
  skip: () => (postgresAvailable() ? undefined : postgresSkipReason()),
  database: postgresDatabase,
});
