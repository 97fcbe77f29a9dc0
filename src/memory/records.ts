/**
 * The stored records as the layers above the domain (channels, agent, API, CLI) see them. They
 * name the domain's types through this file, never the storage client's module, so storage can
 * change without the layers above it knowing.
 */
export type { Scope, Episode, Memory, Digest, AuditEvent, Profile, Conversation } from '../storage/prisma';
