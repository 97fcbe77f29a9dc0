import { describeStorageContract } from '../contracts/storage-contract';
import { sqliteDatabase } from '../support/databases';

describeStorageContract({ name: 'SQLite (better-sqlite3, real file)', database: async () => sqliteDatabase() });
