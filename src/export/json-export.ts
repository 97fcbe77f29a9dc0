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
import { delegateOf, EXPORTED_JSON_COLUMNS, EXPORTED_MODELS, type ExportedDelegate, type ExportedTable } from '../memory/scopes/scope-data-map';
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
import { byId, canonicalJson, compareStrings, SCOPE_EXPORT_FORMAT, SCOPE_EXPORT_VERSION, type JsonValue, type ScopeExport } from './scope-document';

/** The Prisma client or a transaction client: the scope and every exported model of the data map. */
export type ScopeReader = Pick<PrismaClient, 'scope' | ExportedDelegate>;

/** Every exported table's rows of one scope, read by walking the data map (scope-data-map.ts). */
async function readTables(prisma: ScopeReader, scopeId: string): Promise<Record<ExportedTable, unknown[]>> {
  const tables = await Promise.all(EXPORTED_MODELS.map(async (m) => [m.table, await delegateOf(prisma, m).findMany({ where: { scopeId } })] as const));
  return Object.fromEntries(tables) as Record<ExportedTable, unknown[]>;
}

const iso = (date: Date): string => date.toISOString();
const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null);
const jsonOrNull = (value: unknown): JsonValue | null => (value === null || value === undefined ? null : canonicalJson(value));

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
  const profile = (rows.profile as Profile[])[0] ?? null;
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
    scope: {
      id: scope.id,
      key: scope.key,
      channel: scope.channel,
      kind: scope.kind,
      title: scope.title,
      ownerId: scope.ownerId,
      timezone: scope.timezone,
      paused: scope.paused,
      settings: jsonOrNull(scope.settings),
      lastMessageAt: isoOrNull(scope.lastMessageAt),
      createdAt: iso(scope.createdAt),
      updatedAt: iso(scope.updatedAt),
    },
    profile: profile ? { soul: profile.soul, data: jsonOrNull(profile.data), version: profile.version, updatedAt: iso(profile.updatedAt) } : null,
    conversations: byId(conversations).map((c) => ({
      id: c.id,
      status: c.status,
      startedAt: iso(c.startedAt),
      lastActivityAt: iso(c.lastActivityAt),
      endedAt: isoOrNull(c.endedAt),
      endReason: c.endReason,
      summary: c.summary,
      state: jsonOrNull(c.state),
    })),
    episodes: byId(episodes).map((e) => ({
      id: e.id,
      channel: e.channel,
      role: e.role,
      author: e.author,
      authorId: e.authorId,
      content: e.content,
      summary: e.summary,
      timestamp: iso(e.timestamp),
      conversationId: e.conversationId,
      turn: e.turn,
      externalId: e.externalId,
      metadata: jsonOrNull(e.metadata),
      importance: e.importance,
      importanceSource: e.importanceSource,
      consolidated: e.consolidated,
      consolidationAttempts: e.consolidationAttempts,
      consolidatedAt: isoOrNull(e.consolidatedAt),
      contentHash: e.contentHash,
      createdAt: iso(e.createdAt),
      tags: (tagsOf.get(e.id) ?? [])
        .map((t) => ({ kind: t.kind, value: t.value }))
        .sort((a, b) => compareStrings(a.kind, b.kind) || compareStrings(a.value, b.value)),
    })),
    memories: byId(memories).map((m) => ({
      id: m.id,
      category: m.category,
      content: m.content,
      subjectId: m.subjectId,
      subjectName: m.subjectName,
      confidence: m.confidence,
      importance: m.importance,
      active: m.active,
      reinforcementCount: m.reinforcementCount,
      lastReinforcedAt: iso(m.lastReinforcedAt),
      sourceType: m.sourceType,
      sourceTrust: m.sourceTrust,
      validFrom: iso(m.validFrom),
      validTo: isoOrNull(m.validTo),
      supersededById: m.supersededById,
      linkedAt: isoOrNull(m.linkedAt),
      decaySteps: m.decaySteps,
      accessCount: m.accessCount,
      lastAccessedAt: isoOrNull(m.lastAccessedAt),
      pinned: m.pinned,
      createdAt: iso(m.createdAt),
      updatedAt: iso(m.updatedAt),
      sourceEpisodeIds: (sourcesOf.get(m.id) ?? []).map((s) => s.episodeId).sort(compareStrings),
    })),
    memoryLinks: byId(links).map((l) => ({
      id: l.id,
      fromId: l.fromId,
      toId: l.toId,
      kind: l.kind,
      score: l.score,
      reason: l.reason,
      createdAt: iso(l.createdAt),
    })),
    entities: byId(entities).map((e) => ({
      id: e.id,
      key: e.key,
      name: e.name,
      kind: e.kind,
      attributes: jsonOrNull(e.attributes),
      favorability: e.favorability,
      interactionCount: e.interactionCount,
      createdAt: iso(e.createdAt),
      updatedAt: iso(e.updatedAt),
      observations: byId(observationsOf.get(e.id) ?? []).map((o) => ({
        id: o.id,
        episodeId: o.episodeId,
        content: o.content,
        consolidated: o.consolidated,
        createdAt: iso(o.createdAt),
      })),
    })),
    digests: byId(digests).map((d) => ({
      id: d.id,
      periodStart: iso(d.periodStart),
      periodEnd: iso(d.periodEnd),
      content: d.content,
      items: canonicalJson(d.items ?? []),
      status: d.status,
      attempts: d.attempts,
      sentAt: isoOrNull(d.sentAt),
      createdAt: iso(d.createdAt),
    })),
    reminders: byId(reminders).map((r) => ({
      id: r.id,
      text: r.text,
      dueAt: iso(r.dueAt),
      channel: r.channel,
      status: r.status,
      attempts: r.attempts,
      late: r.late,
      sentAt: isoOrNull(r.sentAt),
      createdAt: iso(r.createdAt),
    })),
    sleepRuns: byId(sleepRuns).map((r) => ({
      id: r.id,
      kind: r.kind,
      status: r.status,
      startedAt: iso(r.startedAt),
      finishedAt: isoOrNull(r.finishedAt),
      episodeCount: r.episodeCount,
      llmCalls: r.llmCalls,
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      stats: jsonOrNull(r.stats),
      error: r.error,
    })),
    auditEvents: byId(auditEvents).map((a) => ({
      id: a.id,
      runId: a.runId,
      action: a.action,
      subjectType: a.subjectType,
      subjectId: a.subjectId,
      before: jsonOrNull(a.before),
      after: jsonOrNull(a.after),
      reason: a.reason,
      createdAt: iso(a.createdAt),
    })),
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
