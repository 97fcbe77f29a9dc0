/**
 * Exports one scope as a {@link ScopeExport} document (seed 000: the person can take their memory
 * with them): the scope, its profile (soul), conversations, episodes with tags, every version of
 * every memory with its sources, links, entities with observations, digests, sleep runs and the
 * audit trail.
 *
 * Left out on purpose (docs/export.md says why): vectors (derived data, rebuilt by the embedding
 * worker after an import), `embeddedWith` (a fact about one installation's index), LlmCall rows
 * (operational telemetry of one installation: providers, models, vendor error texts), leases and
 * vector tombstones (transient bookkeeping). There is no "exported at" field, so exporting the same
 * data twice gives the same bytes.
 *
 * {@link readScope} returns the data as stored; {@link exportScope} is what leaves the process: the
 * same document with secrets redacted (registered secret values and credential-looking strings,
 * see src/shared/redact.ts), since an export is a file that travels.
 */
import type { ExportedDelegate, ExportedTable } from '../memory/scopes/scope-data-map';
import { delegateOf, EXPORTED_JSON_COLUMNS, EXPORTED_MODELS } from '../memory/scopes/scope-data-walk';
import { NotFoundError } from '../shared/errors';
import { redactSecrets, redactValue } from '../shared/redact';
import type {
  AuditEvent,
  Conversation,
  Digest,
  Reminder,
  Entity,
  EntityObservation,
  Episode,
  EpisodeTag,
  Memory,
  MemoryLink,
  MemorySource,
  PrismaClient,
  Profile,
  SleepRun,
} from '../storage/prisma';
import {
  exportedAuditEvent,
  exportedConversation,
  exportedDigest,
  exportedEntity,
  exportedEpisode,
  exportedMemory,
  exportedMemoryLink,
  exportedProfile,
  exportedReminder,
  exportedScope,
  exportedSleepRun,
} from './row-readers';
import { byId, SCOPE_EXPORT_FORMAT, SCOPE_EXPORT_VERSION, type ScopeExport } from './scope-document';

/** The Prisma client or a transaction client: the scope and every exported model of the data map. */
export type ScopeReader = Pick<PrismaClient, 'scope' | ExportedDelegate>;

/** Every exported table's rows of one scope, read by walking the data map (scope-data-map.ts). */
async function readTables(prisma: ScopeReader, scopeId: string): Promise<Record<ExportedTable, unknown[]>> {
  const tables = await Promise.all(EXPORTED_MODELS.map(async (m) => [m.table, await delegateOf(prisma, m).findMany({ where: { scopeId } })] as const));
  return Object.fromEntries(tables) as Record<ExportedTable, unknown[]>;
}

function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k);
    if (list) list.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

/** The scope's data exactly as stored (no redaction): what a store migration copies and compares. */
export async function readScope(prisma: ScopeReader, scopeId: string): Promise<ScopeExport> {
  const scope = await prisma.scope.findUnique({ where: { id: scopeId } });
  if (!scope) throw new NotFoundError(`no scope with id ${scopeId}`);
  const rows = await readTables(prisma, scopeId);
  const profile = (rows.profile as Profile[])[0];
  const conversations = rows.conversations as Conversation[];
  const episodes = rows.episodes as Episode[];
  const tags = rows.episodeTags as EpisodeTag[];
  const memories = rows.memories as Memory[];
  const sources = rows.memorySources as MemorySource[];
  const links = rows.memoryLinks as MemoryLink[];
  const entities = rows.entities as Entity[];
  const observations = rows.entityObservations as EntityObservation[];
  const digests = rows.digests as Digest[];
  const reminders = rows.reminders as Reminder[];
  const sleepRuns = rows.sleepRuns as SleepRun[];
  const auditEvents = rows.auditEvents as AuditEvent[];
  const tagsOf = groupBy(tags, (t) => t.episodeId);
  const sourcesOf = groupBy(sources, (s) => s.memoryId);
  const observationsOf = groupBy(observations, (o) => o.entityId);

  return {
    format: SCOPE_EXPORT_FORMAT,
    version: SCOPE_EXPORT_VERSION,
    scope: exportedScope(scope),
    profile: exportedProfile(profile),
    conversations: byId(conversations).map(exportedConversation),
    episodes: byId(episodes).map((e) => exportedEpisode(e, tagsOf.get(e.id) ?? [])),
    memories: byId(memories).map((m) => exportedMemory(m, sourcesOf.get(m.id) ?? [])),
    memoryLinks: byId(links).map(exportedMemoryLink),
    entities: byId(entities).map((e) => exportedEntity(e, observationsOf.get(e.id) ?? [])),
    digests: byId(digests).map(exportedDigest),
    reminders: byId(reminders).map(exportedReminder),
    sleepRuns: byId(sleepRuns).map(exportedSleepRun),
    auditEvents: byId(auditEvents).map(exportedAuditEvent),
  };
}

/**
 * Redacts secrets in every string of the document: plain text fields by value and pattern, JSON
 * documents also by key name (an `apiKey` field in episode metadata). Redacting twice changes
 * nothing, so an exported, imported and re-exported document stays byte-identical.
 */
export function redactScopeExport(doc: ScopeExport): ScopeExport {
  const walk = (value: unknown, inJson: boolean): unknown => {
    if (typeof value === 'string') return redactSecrets(value);
    if (Array.isArray(value)) return value.map((item) => walk(item, inJson));
    if (value === null || typeof value !== 'object') return value;
    if (inJson) return redactValue(value);
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = walk(inner, EXPORTED_JSON_COLUMNS.has(key));
    return out;
  };
  return walk(doc, false) as ScopeExport;
}

/** The export of one scope as it leaves the process: complete, deterministic, secrets redacted. */
export async function exportScope(prisma: ScopeReader, scopeId: string): Promise<ScopeExport> {
  return redactScopeExport(await readScope(prisma, scopeId));
}
