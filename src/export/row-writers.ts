/**
 * How each table of a scope export is written: one writer per exported model of the data map
 * (scope-data-map.ts), turning a batch of document rows (ISO dates, JSON values) into one
 * createMany under the target scope. A model the map exports without a writer here fails to
 * compile ({@link ROW_WRITERS} is keyed by every exported table). Used by insert-scope.ts, for
 * the JSON import and the store migration alike.
 */
import { Prisma as PrismaValues } from '../generated/sqlite/client';
import type { ExportedTable } from '../memory/scopes/scope-data-map';
import type { Prisma } from '../storage/prisma';
import type { JsonValue, ScopeExport } from './scope-document';

type Tx = Prisma.TransactionClient;

/** A document date as the database takes it. */
export const date = (value: string): Date => new Date(value);
export const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));
/** A nullable JSON column: null is the database's NULL. */
export const nullableJson = (value: JsonValue | null) => (value === null ? PrismaValues.DbNull : (value as Prisma.InputJsonValue));
/** A required JSON column: null is the JSON value null. */
const requiredJson = (value: JsonValue) => (value === null ? PrismaValues.JsonNull : (value as Prisma.InputJsonValue));

type Episode = ScopeExport['episodes'][number];
type Memory = ScopeExport['memories'][number];
type Entity = ScopeExport['entities'][number];
type Observation = Entity['observations'][number] & { entityId: string };

/** Writes one batch of one table's rows under `scopeId`. */
export type RowWriter = (tx: Tx, rows: readonly unknown[], scopeId: string) => Promise<unknown>;

/** The writer of every exported table. */
export const ROW_WRITERS: { readonly [T in ExportedTable]: RowWriter } = {
  profile: (tx, rows, scopeId) => {
    const p = rows[0] as NonNullable<ScopeExport['profile']>;
    return tx.profile.create({ data: { scopeId, soul: p.soul, data: nullableJson(p.data), version: p.version, updatedAt: date(p.updatedAt) } });
  },
  conversations: (tx, rows, scopeId) =>
    tx.conversation.createMany({
      data: (rows as ScopeExport['conversations']).map((c) => ({
        id: c.id,
        scopeId,
        status: c.status,
        startedAt: date(c.startedAt),
        lastActivityAt: date(c.lastActivityAt),
        endedAt: dateOrNull(c.endedAt),
        endReason: c.endReason,
        summary: c.summary,
        state: nullableJson(c.state),
      })),
    }),
  episodes: (tx, rows, scopeId) =>
    tx.episode.createMany({
      data: (rows as Episode[]).map((e) => ({
        id: e.id,
        scopeId,
        channel: e.channel,
        role: e.role,
        author: e.author,
        authorId: e.authorId ?? null,
        content: e.content,
        summary: e.summary,
        timestamp: date(e.timestamp),
        conversationId: e.conversationId,
        turn: e.turn,
        externalId: e.externalId,
        metadata: nullableJson(e.metadata),
        importance: e.importance,
        importanceSource: e.importanceSource,
        consolidated: e.consolidated,
        consolidationAttempts: e.consolidationAttempts,
        consolidatedAt: dateOrNull(e.consolidatedAt),
        contentHash: e.contentHash,
        embeddedWith: null,
        createdAt: date(e.createdAt),
      })),
    }),
  episodeTags: (tx, rows, scopeId) =>
    tx.episodeTag.createMany({ data: (rows as Array<{ episodeId: string; kind: string; value: string }>).map((t) => ({ scopeId, ...t })) }),
  memories: (tx, rows, scopeId) =>
    tx.memory.createMany({
      data: (rows as Memory[]).map((m) => ({
        id: m.id,
        scopeId,
        category: m.category,
        content: m.content,
        subjectId: m.subjectId ?? null,
        subjectName: m.subjectName ?? null,
        confidence: m.confidence,
        importance: m.importance,
        active: m.active,
        reinforcementCount: m.reinforcementCount,
        lastReinforcedAt: date(m.lastReinforcedAt),
        sourceType: m.sourceType,
        sourceTrust: m.sourceTrust,
        validFrom: date(m.validFrom),
        validTo: dateOrNull(m.validTo),
        supersededById: m.supersededById,
        embeddedWith: null,
        linkedAt: dateOrNull(m.linkedAt),
        decaySteps: m.decaySteps,
        accessCount: m.accessCount,
        lastAccessedAt: dateOrNull(m.lastAccessedAt),
        pinned: m.pinned ?? false,
        createdAt: date(m.createdAt),
        updatedAt: date(m.updatedAt),
      })),
    }),
  memorySources: (tx, rows, scopeId) =>
    tx.memorySource.createMany({ data: (rows as Array<{ memoryId: string; episodeId: string }>).map((r) => ({ scopeId, ...r })) }),
  memoryLinks: (tx, rows, scopeId) =>
    tx.memoryLink.createMany({
      data: (rows as ScopeExport['memoryLinks']).map((l) => ({
        id: l.id,
        scopeId,
        fromId: l.fromId,
        toId: l.toId,
        kind: l.kind,
        score: l.score,
        reason: l.reason,
        createdAt: date(l.createdAt),
      })),
    }),
  entities: (tx, rows, scopeId) =>
    tx.entity.createMany({
      data: (rows as Entity[]).map((e) => ({
        id: e.id,
        scopeId,
        key: e.key,
        name: e.name,
        kind: e.kind,
        attributes: nullableJson(e.attributes),
        favorability: e.favorability,
        interactionCount: e.interactionCount,
        createdAt: date(e.createdAt),
        updatedAt: date(e.updatedAt),
      })),
    }),
  entityObservations: (tx, rows, scopeId) =>
    tx.entityObservation.createMany({
      data: (rows as Observation[]).map((o) => ({
        id: o.id,
        scopeId,
        entityId: o.entityId,
        episodeId: o.episodeId,
        content: o.content,
        consolidated: o.consolidated,
        createdAt: date(o.createdAt),
      })),
    }),
  digests: (tx, rows, scopeId) =>
    tx.digest.createMany({
      data: (rows as ScopeExport['digests']).map((d) => ({
        id: d.id,
        scopeId,
        periodStart: date(d.periodStart),
        periodEnd: date(d.periodEnd),
        content: d.content,
        items: requiredJson(d.items),
        status: d.status,
        attempts: d.attempts,
        sentAt: dateOrNull(d.sentAt),
        createdAt: date(d.createdAt),
      })),
    }),
  reminders: (tx, rows, scopeId) =>
    tx.reminder.createMany({
      data: (rows as ScopeExport['reminders']).map((r) => ({
        id: r.id,
        scopeId,
        text: r.text,
        dueAt: date(r.dueAt),
        channel: r.channel,
        status: r.status,
        attempts: r.attempts,
        late: r.late,
        sentAt: dateOrNull(r.sentAt),
        createdAt: date(r.createdAt),
      })),
    }),
  sleepRuns: (tx, rows, scopeId) =>
    tx.sleepRun.createMany({
      data: (rows as ScopeExport['sleepRuns']).map((r) => ({
        id: r.id,
        scopeId,
        kind: r.kind,
        status: r.status,
        startedAt: date(r.startedAt),
        finishedAt: dateOrNull(r.finishedAt),
        episodeCount: r.episodeCount,
        llmCalls: r.llmCalls,
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
        stats: nullableJson(r.stats),
        error: r.error,
      })),
    }),
  auditEvents: (tx, rows, scopeId) =>
    tx.auditEvent.createMany({
      data: (rows as ScopeExport['auditEvents']).map((a) => ({
        id: a.id,
        scopeId,
        runId: a.runId,
        action: a.action,
        subjectType: a.subjectType,
        subjectId: a.subjectId,
        before: nullableJson(a.before),
        after: nullableJson(a.after),
        reason: a.reason,
        createdAt: date(a.createdAt),
      })),
    }),
};
