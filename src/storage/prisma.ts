/**
 * The Prisma client type the repositories are written against.
 *
 * Both providers are generated from the same models (prisma/models.prisma), so the SQLite and
 * PostgreSQL clients expose the same model API; the repositories use the SQLite client's type and
 * the PostgreSQL client is adapted to it in exactly one place (postgres-driver.ts).
 */
export type { PrismaClient, Prisma } from '../generated/sqlite/client';
export type {
  Scope,
  Episode,
  EpisodeTag,
  Memory,
  MemorySource,
  MemoryLink,
  AuditEvent,
  SleepRun,
  Digest,
  Reminder,
  Profile,
  Conversation,
  LlmCall,
  Lease,
  Entity,
  EntityObservation,
  VectorTombstone,
  IdentityLink,
} from '../generated/sqlite/client';

/** Which database a client talks to; raw SQL (full-text search) differs per provider. */
export type DatabaseProvider = 'sqlite' | 'postgres';
