/**
 * How each stored row of a scope reads in its export (docs/export.md): dates as ISO 8601 strings,
 * JSON columns with their keys sorted, child rows (an episode's tags, a memory's sources, an
 * entity's observations) inside their parent in a fixed order, so the same data gives the same
 * bytes. The mirror of row-writers.ts; json-export.ts assembles the document from these.
 */
import type {
  AuditEvent,
  Conversation,
  Digest,
  Entity,
  EntityObservation,
  Episode,
  EpisodeTag,
  Memory,
  MemoryLink,
  MemorySource,
  Profile,
  Reminder,
  Scope,
  SleepRun,
} from '../storage/prisma';
import { byId, canonicalJson, compareStrings, type JsonValue, type ScopeExport } from './scope-document';

const iso = (date: Date): string => date.toISOString();
const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null);
const jsonOrNull = (value: unknown): JsonValue | null => (value === null || value === undefined ? null : canonicalJson(value));

type Exported<K extends keyof ScopeExport> = ScopeExport[K] extends ReadonlyArray<infer Row> ? Row : ScopeExport[K];

export function exportedScope(scope: Scope): ScopeExport['scope'] {
  return {
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
  };
}

export function exportedProfile(profile: Profile | undefined): ScopeExport['profile'] {
  return profile ? { soul: profile.soul, data: jsonOrNull(profile.data), version: profile.version, updatedAt: iso(profile.updatedAt) } : null;
}

export function exportedConversation(c: Conversation): Exported<'conversations'> {
  return {
    id: c.id,
    status: c.status,
    startedAt: iso(c.startedAt),
    lastActivityAt: iso(c.lastActivityAt),
    endedAt: isoOrNull(c.endedAt),
    endReason: c.endReason,
    summary: c.summary,
    state: jsonOrNull(c.state),
  };
}

/** An episode with its tags (sorted by kind, then value). */
export function exportedEpisode(e: Episode, tags: readonly EpisodeTag[]): Exported<'episodes'> {
  return {
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
    tags: tags.map((t) => ({ kind: t.kind, value: t.value })).sort((a, b) => compareStrings(a.kind, b.kind) || compareStrings(a.value, b.value)),
  };
}

/** A memory with the ids of the episodes it was learned from (sorted). */
export function exportedMemory(m: Memory, sources: readonly MemorySource[]): Exported<'memories'> {
  return {
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
    sourceEpisodeIds: sources.map((s) => s.episodeId).sort(compareStrings),
  };
}

export function exportedMemoryLink(l: MemoryLink): Exported<'memoryLinks'> {
  return {
    id: l.id,
    fromId: l.fromId,
    toId: l.toId,
    kind: l.kind,
    score: l.score,
    reason: l.reason,
    createdAt: iso(l.createdAt),
  };
}

/** An entity with its observations (by id). */
export function exportedEntity(e: Entity, observations: readonly EntityObservation[]): Exported<'entities'> {
  return {
    id: e.id,
    key: e.key,
    name: e.name,
    kind: e.kind,
    attributes: jsonOrNull(e.attributes),
    favorability: e.favorability,
    interactionCount: e.interactionCount,
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
    observations: byId(observations).map((o) => ({
      id: o.id,
      episodeId: o.episodeId,
      content: o.content,
      consolidated: o.consolidated,
      createdAt: iso(o.createdAt),
    })),
  };
}

export function exportedDigest(d: Digest): Exported<'digests'> {
  return {
    id: d.id,
    periodStart: iso(d.periodStart),
    periodEnd: iso(d.periodEnd),
    content: d.content,
    items: canonicalJson(d.items ?? []),
    status: d.status,
    attempts: d.attempts,
    sentAt: isoOrNull(d.sentAt),
    createdAt: iso(d.createdAt),
  };
}

export function exportedReminder(r: Reminder): Exported<'reminders'> {
  return {
    id: r.id,
    text: r.text,
    dueAt: iso(r.dueAt),
    channel: r.channel,
    status: r.status,
    attempts: r.attempts,
    late: r.late,
    sentAt: isoOrNull(r.sentAt),
    createdAt: iso(r.createdAt),
  };
}

export function exportedSleepRun(r: SleepRun): Exported<'sleepRuns'> {
  return {
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
  };
}

export function exportedAuditEvent(a: AuditEvent): Exported<'auditEvents'> {
  return {
    id: a.id,
    runId: a.runId,
    action: a.action,
    subjectType: a.subjectType,
    subjectId: a.subjectId,
    before: jsonOrNull(a.before),
    after: jsonOrNull(a.after),
    reason: a.reason,
    createdAt: iso(a.createdAt),
  };
}
