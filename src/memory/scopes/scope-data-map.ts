/**
 * One map of a scope's data: every model of prisma/models.prisma, how its rows belong to a scope,
 * which of its columns hold people's words (text and JSON), where it goes in an export, whether a
 * store migration copies it, what a copy under a new key (`import-scope --as`) clears, and what
 * forgetting does to it.
 *
 * Everything that touches *all* of a person's data walks this map instead of naming tables by
 * hand: the export's reads, the import's emptiness check, the store migration's counts and
 * conflict check, the purge, forgetting by words' column lists and the forget-completeness scan
 * (the lists and lookups they use are derived in scope-data-walk.ts; the map's vocabulary is
 * scope-data-types.ts).
 * test/unit/scope-data-map.test.ts compares it with the schema Prisma generated from (both
 * clients' data models and the schema file): a new model, or a new String or Json column, that
 * the map does not classify fails that test, so a column cannot hold a person's words unnoticed.
 */
import type { ExportSection, ModelData } from './scope-data-types';

export type { ExportPlace, ExportSection, ForgetAction, ModelData, PurgeAction, ScopeKeying } from './scope-data-types';

const INSTALLATION_INDEX = 'a fact about one installation\u2019s vector index; the embedding worker re-embeds after an import';

/** Every model of the schema, in the foreign-key order an import writes them. */
export const SCOPE_DATA_MAP = [
  {
    model: 'Scope',
    delegate: 'scope',
    table: 'scope',
    scope: { by: 'self' },
    text: ['title'],
    json: ['settings'],
    plain: ['id', 'key', 'channel', 'kind', 'ownerId', 'timezone'],
    exportPlace: { as: 'scope' },
    migrated: true,
    // The owner is who digests are delivered to (the Telegram chat id of a private chat): a copy
    // is someone else's scope until its owner is set again by its own chat or terminal user.
    clearedInCopy: ['ownerId'],
    forget: {
      title: { keep: 'the chat\u2019s or user\u2019s display name, not something learned' },
      settings: { keep: 'sleep and digest settings: times, budgets, switches' },
    },
    purge: 'keep',
  },
  {
    model: 'Profile',
    delegate: 'profile',
    table: 'profile',
    scope: { by: 'scopeId' },
    text: ['soul'],
    json: ['data'],
    plain: ['scopeId'],
    exportPlace: { as: 'section', section: 'profile', single: true },
    migrated: true,
    forget: { soul: 'rebuild', data: 'rebuild' },
    purge: 'rebuild',
  },
  {
    model: 'Conversation',
    delegate: 'conversation',
    table: 'conversations',
    scope: { by: 'scopeId' },
    text: ['summary'],
    json: ['state'],
    plain: ['id', 'scopeId', 'status', 'endReason'],
    exportPlace: { as: 'section', section: 'conversations' },
    migrated: true,
    forget: { summary: 'redact', state: 'redact' },
    purge: 'redact',
  },
  {
    model: 'Episode',
    delegate: 'episode',
    table: 'episodes',
    scope: { by: 'scopeId' },
    text: ['author', 'content', 'summary'],
    json: ['metadata'],
    plain: ['id', 'scopeId', 'channel', 'role', 'authorId', 'conversationId', 'externalId', 'importanceSource', 'contentHash', 'embeddedWith'],
    exportPlace: { as: 'section', section: 'episodes' },
    notExported: { embeddedWith: INSTALLATION_INDEX },
    migrated: true,
    forget: {
      author: { keep: 'who said it (a display name), not what was said' },
      content: 'redact',
      summary: 'redact',
      metadata: 'redact',
    },
    purge: 'redact',
  },
  {
    model: 'EpisodeTag',
    delegate: 'episodeTag',
    table: 'episodeTags',
    scope: { by: 'scopeId' },
    text: ['value'],
    json: [],
    plain: ['scopeId', 'episodeId', 'kind'],
    exportPlace: { as: 'nested', parent: 'Episode', field: 'tags', key: 'episodeId' },
    migrated: true,
    forget: { value: 'delete' },
    purge: 'redact',
  },
  {
    model: 'Memory',
    delegate: 'memory',
    table: 'memories',
    scope: { by: 'scopeId' },
    text: ['content', 'subjectName'],
    json: [],
    plain: ['id', 'scopeId', 'category', 'subjectId', 'sourceType', 'supersededById', 'embeddedWith'],
    exportPlace: { as: 'section', section: 'memories' },
    notExported: { embeddedWith: INSTALLATION_INDEX },
    migrated: true,
    forget: { content: 'delete', subjectName: 'delete' },
    purge: 'delete',
  },
  {
    model: 'MemorySource',
    delegate: 'memorySource',
    table: 'memorySources',
    scope: { by: 'scopeId' },
    text: [],
    json: [],
    plain: ['scopeId', 'memoryId', 'episodeId'],
    exportPlace: { as: 'nested', parent: 'Memory', field: 'sourceEpisodeIds', key: 'memoryId' },
    migrated: true,
    forget: {},
    purge: 'cascade',
  },
  {
    model: 'MemoryLink',
    delegate: 'memoryLink',
    table: 'memoryLinks',
    scope: { by: 'scopeId' },
    text: ['reason'],
    json: [],
    plain: ['id', 'scopeId', 'fromId', 'toId', 'kind'],
    exportPlace: { as: 'section', section: 'memoryLinks' },
    migrated: true,
    forget: { reason: 'redact' },
    purge: 'cascade',
  },
  {
    model: 'Entity',
    delegate: 'entity',
    table: 'entities',
    scope: { by: 'scopeId' },
    text: ['key', 'name'],
    json: ['attributes'],
    plain: ['id', 'scopeId', 'kind'],
    exportPlace: { as: 'section', section: 'entities' },
    migrated: true,
    forget: { key: 'delete', name: 'delete', attributes: 'redact' },
    purge: 'delete',
  },
  {
    model: 'EntityObservation',
    delegate: 'entityObservation',
    table: 'entityObservations',
    scope: { by: 'scopeId' },
    text: ['content'],
    json: [],
    plain: ['id', 'scopeId', 'entityId', 'episodeId'],
    exportPlace: { as: 'nested', parent: 'Entity', field: 'observations', key: 'entityId' },
    migrated: true,
    forget: { content: 'delete' },
    purge: 'cascade',
  },
  {
    model: 'Digest',
    delegate: 'digest',
    table: 'digests',
    scope: { by: 'scopeId' },
    text: ['content'],
    json: ['items'],
    plain: ['id', 'scopeId', 'status'],
    exportPlace: { as: 'section', section: 'digests' },
    migrated: true,
    forget: { content: 'rebuild', items: 'rebuild' },
    purge: 'rebuild',
  },
  {
    model: 'Reminder',
    delegate: 'reminder',
    table: 'reminders',
    scope: { by: 'scopeId' },
    text: ['text'],
    json: [],
    plain: ['id', 'scopeId', 'channel', 'status'],
    exportPlace: { as: 'section', section: 'reminders' },
    // Reminders travel with the person: a store migration keeps every one as it is (pending ones
    // still fire, sent ones stay sent). A copy under a new key keeps them as history but
    // cancelled (scope-copy.ts): its key names another chat, which must not get the original's.
    migrated: true,
    forget: { text: 'delete' },
    purge: 'delete',
  },
  {
    model: 'SleepRun',
    delegate: 'sleepRun',
    table: 'sleepRuns',
    scope: { by: 'scopeId' },
    text: ['error'],
    json: ['stats'],
    plain: ['id', 'scopeId', 'kind', 'status'],
    exportPlace: { as: 'section', section: 'sleepRuns' },
    migrated: true,
    forget: { error: { keep: 'the service\u2019s own failure message' }, stats: { keep: 'counts and token figures' } },
    purge: 'keep',
  },
  {
    model: 'AuditEvent',
    delegate: 'auditEvent',
    table: 'auditEvents',
    scope: { by: 'scopeId' },
    text: ['reason'],
    json: ['before', 'after'],
    plain: ['id', 'scopeId', 'runId', 'action', 'subjectType', 'subjectId'],
    exportPlace: { as: 'section', section: 'auditEvents' },
    migrated: true,
    forget: { reason: 'redact', before: 'redact', after: 'redact' },
    purge: 'redact',
  },
  {
    model: 'LlmCall',
    delegate: 'llmCall',
    table: 'llmCalls',
    scope: { by: 'optionalScopeId' },
    text: ['error'],
    json: [],
    plain: ['id', 'scopeId', 'purpose', 'provider', 'model', 'status', 'runId'],
    exportPlace: { as: 'left out', why: 'operational telemetry of one installation (providers, models, vendor errors)' },
    migrated: true,
    forget: { error: { keep: 'the provider\u2019s error text; prompts are never stored' } },
    purge: 'keep',
  },
  {
    model: 'VectorTombstone',
    delegate: 'vectorTombstone',
    table: 'vectorTombstones',
    scope: { by: 'scopeId' },
    text: [],
    json: [],
    plain: ['id', 'scopeId', 'kind'],
    exportPlace: { as: 'left out', why: 'transient bookkeeping: a vector the embedding worker still has to delete' },
    migrated: { no: 'transient: the source\u2019s worker finishes its deletions in the source\u2019s own index' },
    forget: {},
    purge: 'keep',
  },
  {
    model: 'IdentityLink',
    delegate: 'identityLink',
    table: 'identityLinks',
    scope: { by: 'scopeId' },
    text: [],
    json: [],
    plain: ['identityKey', 'scopeId', 'fromScopeId', 'state'],
    exportPlace: { as: 'left out', why: 'which chats of one installation feed the scope; they are linked again after an import' },
    // A move to another store is the same installation: its chats stay joined (migrate-store.ts
    // copies a scope's links with it, keyed by the identity, and verifies them).
    migrated: true,
    forget: {},
    purge: 'keep',
  },
  {
    model: 'LinkCode',
    delegate: 'linkCode',
    table: 'linkCodes',
    scope: { by: 'none', why: 'the hash of a one-time pairing code, valid ten minutes' },
    text: [],
    json: [],
    plain: ['codeHash', 'identityKey'],
    exportPlace: { as: 'left out', why: 'transient bookkeeping' },
    migrated: { no: 'expires within minutes' },
    forget: {},
    purge: 'keep',
  },
  {
    model: 'WebSession',
    delegate: 'webSession',
    table: 'webSessions',
    scope: { by: 'scopeId' },
    text: [],
    json: [],
    plain: ['id', 'linkHash', 'sessionHash', 'scopeId', 'identityKey'],
    // Credentials, not memory: an export or a copy must never open the scope in a browser.
    exportPlace: { as: 'left out', why: 'credentials: the hashes of browser links and sessions of the memory page' },
    migrated: { no: 'credentials of one installation: a moved store asks for a new link' },
    forget: {},
    // A purge ends every browser session of the scope (purge-scope.ts).
    purge: 'delete',
  },
  {
    model: 'Lease',
    delegate: 'lease',
    table: 'leases',
    scope: { by: 'none', why: 'a named lock of a job, with an expiry' },
    text: [],
    json: [],
    plain: ['name', 'holder'],
    exportPlace: { as: 'left out', why: 'transient bookkeeping' },
    migrated: { no: 'locks of the running installation' },
    forget: {},
    purge: 'keep',
  },
  {
    model: 'WebhookNonce',
    delegate: 'webhookNonce',
    table: 'webhookNonces',
    scope: { by: 'none', why: 'a webhook signature already accepted, pruned after the clock skew' },
    text: [],
    json: [],
    plain: ['signature'],
    exportPlace: { as: 'left out', why: 'transient bookkeeping' },
    migrated: { no: 'replay protection of the running installation, pruned within minutes' },
    forget: {},
    purge: 'keep',
  },
  {
    model: 'TelegramUpdate',
    delegate: 'telegramUpdate',
    table: 'telegramUpdates',
    scope: { by: 'none', why: 'a Telegram update as received, keyed by chat; its text is emptied once it is handled' },
    text: ['payload', 'calls'],
    json: [],
    plain: ['chatKey', 'status'],
    exportPlace: { as: 'left out', why: 'the delivery queue of the running installation' },
    migrated: { no: 'the delivery queue of the running installation' },
    forget: { payload: { keep: 'emptied once handled' }, calls: { keep: 'emptied once handled' } },
    purge: 'keep',
  },
] as const satisfies readonly ModelData[];

/** The name of a model in the map. */
export type ScopeModelName = (typeof SCOPE_DATA_MAP)[number]['model'];
type Entry = (typeof SCOPE_DATA_MAP)[number];
/** A map entry by model name. */
export type ModelEntry<M extends ScopeModelName> = Extract<Entry, { model: M }>;
/** The text and JSON columns of a model. */
export type WordColumn<M extends ScopeModelName> = ModelEntry<M>['text'][number] | ModelEntry<M>['json'][number];

/** A map entry whose rows are in a scope export (a section of their own or nested in a parent's). */
export type ExportedEntry = Extract<Entry, { exportPlace: { as: 'section' | 'nested' } }>;
/** The table name of an exported model (the import's and the migration's counts). */
export type ExportedTable = ExportedEntry['table'];
/** The Prisma delegate of an exported model. */
export type ExportedDelegate = ExportedEntry['delegate'];
/** A map entry with a section of rows with ids (not nested, not the single profile). */
export type SectionEntry = Extract<ExportedEntry, { exportPlace: { as: 'section'; section: Exclude<ExportSection, 'profile'> } }>;
/** A section of a scope export that holds rows with ids. */
export type RowSectionName = SectionEntry['exportPlace']['section'];

/** A map entry whose rows a store migration copies and verifies per scope. */
export type MigratedEntry = Extract<Entry, { migrated: true; scope: { by: 'scopeId' | 'optionalScopeId' } }>;
