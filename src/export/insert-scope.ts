/**
 * Writes a validated scope export into the database, table by table in foreign-key order, in
 * batches. Shared by the JSON import and the store migration, so a row is written one way
 * whichever path brought it.
 *
 * The full-text index follows through the database triggers. Vectors are not in the document:
 * rows arrive with `embeddedWith` null, which is exactly the embedding worker's queue.
 */
import { Prisma as PrismaValues } from '../generated/sqlite/client';
import type { Prisma } from '../storage/prisma';
import { supersessionOrder } from './import-validation';
import type { JsonValue, ScopeExport } from './scope-document';

type Tx = Prisma.TransactionClient;

/** Rows per createMany. */
const BATCH = 500;
/**
 * Options of the import transaction. Generous: a scope of 100,000 episodes takes tens of seconds
 * on a small machine.
 */
export const IMPORT_TRANSACTION = { timeout: 30 * 60_000, maxWait: 60_000 } as const;

const date = (value: string): Date => new Date(value);
const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));
const notAfterNow = (value: Date | null): Date | null => {
  const now = new Date();
  return value && value > now ? now : value;
};
const nullableJson = (value: JsonValue | null) => (value === null ? PrismaValues.DbNull : (value as Prisma.InputJsonValue));
const requiredJson = (value: JsonValue) => (value === null ? PrismaValues.JsonNull : (value as Prisma.InputJsonValue));

/** Writes `rows` BATCH at a time, so no single statement grows with the size of the scope. */
async function inBatches<T>(rows: readonly T[], write: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH) await write(rows.slice(start, start + BATCH));
}

/**
 * Writes a validated document's rows under `scopeId` on a transaction client: the scope row
 * (created, or updated in place when `scopeExists`), then every table in foreign-key order. No
 * checks beyond the database's own; callers validate first (json-import.ts, migrate-store.ts).
 */
export async function insertScope(
  tx: Tx,
  doc: ScopeExport,
  target: { scopeId: string; scopeKey: string; scopeExists: boolean },
): Promise<void> {
  const { scopeId } = target;
  const s = doc.scope;
  const scopeData = {
    key: target.scopeKey,
    channel: s.channel,
    kind: s.kind,
    title: s.title,
    ownerId: s.ownerId,
    timezone: s.timezone,
    paused: s.paused,
    settings: nullableJson(s.settings),
    // Never ahead of the clock: a document from an older version may hold year 9999, which would
    // keep the scope from ever being idle (docs/reliability.md, "Hostile input, round two").
    lastMessageAt: notAfterNow(dateOrNull(s.lastMessageAt)),
    createdAt: date(s.createdAt),
    updatedAt: date(s.updatedAt),
  };
  if (target.scopeExists) await tx.scope.update({ where: { id: scopeId }, data: scopeData });
  else await tx.scope.create({ data: { id: scopeId, ...scopeData } });

  if (doc.profile) {
    const p = doc.profile;
    await tx.profile.create({ data: { scopeId, soul: p.soul, data: nullableJson(p.data), version: p.version, updatedAt: date(p.updatedAt) } });
  }
  await inBatches(doc.conversations, (batch) =>
    tx.conversation.createMany({
      data: batch.map((c) => ({
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
  );
  await inBatches(doc.episodes, (batch) =>
    tx.episode.createMany({
      data: batch.map((e) => ({
        id: e.id,
        scopeId,
        channel: e.channel,
        role: e.role,
        author: e.author,
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
  );
  await inBatches(
    doc.episodes.flatMap((e) => e.tags.map((t) => ({ scopeId, episodeId: e.id, kind: t.kind, value: t.value }))),
    (batch) => tx.episodeTag.createMany({ data: batch }),
  );
  await inBatches(supersessionOrder(doc.memories) ?? [], (batch) =>
    tx.memory.createMany({
      data: batch.map((m) => ({
        id: m.id,
        scopeId,
        category: m.category,
        content: m.content,
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
        createdAt: date(m.createdAt),
        updatedAt: date(m.updatedAt),
      })),
    }),
  );
  await inBatches(
    doc.memories.flatMap((m) => m.sourceEpisodeIds.map((episodeId) => ({ scopeId, memoryId: m.id, episodeId }))),
    (batch) => tx.memorySource.createMany({ data: batch }),
  );
  await inBatches(doc.memoryLinks, (batch) =>
    tx.memoryLink.createMany({
      data: batch.map((l) => ({ id: l.id, scopeId, fromId: l.fromId, toId: l.toId, kind: l.kind, score: l.score, reason: l.reason, createdAt: date(l.createdAt) })),
    }),
  );
  await inBatches(doc.entities, (batch) =>
    tx.entity.createMany({
      data: batch.map((e) => ({
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
  );
  await inBatches(
    doc.entities.flatMap((e) =>
      e.observations.map((o) => ({ id: o.id, scopeId, entityId: e.id, episodeId: o.episodeId, content: o.content, consolidated: o.consolidated, createdAt: date(o.createdAt) })),
    ),
    (batch) => tx.entityObservation.createMany({ data: batch }),
  );
  await inBatches(doc.digests, (batch) =>
    tx.digest.createMany({
      data: batch.map((d) => ({
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
  );
  await inBatches(doc.sleepRuns, (batch) =>
    tx.sleepRun.createMany({
      data: batch.map((r) => ({
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
  );
  await inBatches(doc.auditEvents, (batch) =>
    tx.auditEvent.createMany({
      data: batch.map((a) => ({
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
  );
}
