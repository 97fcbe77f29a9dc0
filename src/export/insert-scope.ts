/**
 * Writes a validated scope export into the database, table by table in foreign-key order, in
 * batches. Shared by the JSON import and the store migration, so a row is written one way
 * whichever path brought it.
 *
 * The full-text index follows through the database triggers. Vectors are not in the document:
 * rows arrive with `embeddedWith` null, which is exactly the embedding worker's queue.
 */
import { Prisma as PrismaValues } from '../generated/sqlite/client';
import type { ExportedTable } from '../memory/scopes/scope-data-map';
import type { Prisma } from '../storage/prisma';
import { supersessionOrder } from './import-validation';
import type { JsonValue, ScopeExport } from './scope-document';

type Tx = Prisma.TransactionClient;

/** Rows per createMany. */
export const BATCH = 500;
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

/**
 * The tables of a document's rows: the exported models of the data map (scope-data-map.ts), whose
 * order is the foreign-key order {@link scopeBatches} yields them in. A model the map exports and
 * {@link insertBatch} does not write fails to compile there.
 */
export type RowTable = ExportedTable;

/** Up to BATCH rows of one table: document rows, or the derived rows of tags, sources and observations. */
export interface RowBatch {
  readonly table: RowTable;
  readonly rows: readonly unknown[];
}

type Episode = ScopeExport['episodes'][number];
type Memory = ScopeExport['memories'][number];
type Entity = ScopeExport['entities'][number];
type Observation = Entity['observations'][number] & { entityId: string };

/** Slices `rows` into batches of `size`. */
function* sliced(table: RowTable, rows: readonly unknown[], size: number): Generator<RowBatch> {
  for (let start = 0; start < rows.length; start += size) yield { table, rows: rows.slice(start, start + size) };
}

/**
 * A validated document's rows (all but the scope row) in batches of `size`, table by table in
 * foreign-key order: what {@link insertBatch} writes. The streamed admin import sends these one
 * at a time from the thread that parsed the document.
 */
export function* scopeBatches(doc: ScopeExport, size = BATCH): Generator<RowBatch> {
  if (doc.profile) yield { table: 'profile', rows: [doc.profile] };
  yield* sliced('conversations', doc.conversations, size);
  yield* sliced('episodes', doc.episodes, size);
  yield* sliced(
    'episodeTags',
    doc.episodes.flatMap((e) => e.tags.map((t) => ({ episodeId: e.id, kind: t.kind, value: t.value }))),
    size,
  );
  yield* sliced('memories', supersessionOrder(doc.memories) ?? [], size);
  yield* sliced(
    'memorySources',
    doc.memories.flatMap((m) => m.sourceEpisodeIds.map((episodeId) => ({ memoryId: m.id, episodeId }))),
    size,
  );
  yield* sliced('memoryLinks', doc.memoryLinks, size);
  yield* sliced('entities', doc.entities, size);
  yield* sliced(
    'entityObservations',
    doc.entities.flatMap((e) => e.observations.map((o) => ({ ...o, entityId: e.id }))),
    size,
  );
  yield* sliced('digests', doc.digests, size);
  yield* sliced('reminders', doc.reminders, size);
  yield* sliced('sleepRuns', doc.sleepRuns, size);
  yield* sliced('auditEvents', doc.auditEvents, size);
}

/**
 * Writes a validated document's rows under `scopeId` on a transaction client: the scope row
 * (created, or updated in place when `scopeExists`), then every table in foreign-key order. No
 * checks beyond the database's own; callers validate first (json-import.ts, migrate-store.ts).
 */
export async function insertScope(tx: Tx, doc: ScopeExport, target: { scopeId: string; scopeKey: string; scopeExists: boolean }): Promise<void> {
  await insertScopeRow(tx, doc.scope, target);
  for (const batch of scopeBatches(doc)) await insertBatch(tx, batch, target.scopeId);
}

/** Creates the scope row (or updates it in place when `scopeExists`) from the document's scope. */
export async function insertScopeRow(tx: Tx, s: ScopeExport['scope'], target: { scopeId: string; scopeKey: string; scopeExists: boolean }): Promise<void> {
  const { scopeId } = target;
  const scopeData = {
    key: target.scopeKey,
    channel: s.channel,
    kind: s.kind,
    title: s.title,
    // A document without an owner (a copy, scope-data-map.ts `clearedInCopy`) never unbinds the
    // scope it fills from the chat that owns it; null is the default of a new scope anyway.
    ownerId: s.ownerId ?? undefined,
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
}

/** Writes one batch of rows under `scopeId` (one createMany). */
export async function insertBatch(tx: Tx, batch: RowBatch, scopeId: string): Promise<void> {
  switch (batch.table) {
    case 'profile': {
      const p = batch.rows[0] as NonNullable<ScopeExport['profile']>;
      await tx.profile.create({ data: { scopeId, soul: p.soul, data: nullableJson(p.data), version: p.version, updatedAt: date(p.updatedAt) } });
      return;
    }
    case 'conversations':
      await tx.conversation.createMany({
        data: (batch.rows as ScopeExport['conversations']).map((c) => ({
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
      });
      return;
    case 'episodes':
      await tx.episode.createMany({
        data: (batch.rows as Episode[]).map((e) => ({
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
      });
      return;
    case 'episodeTags':
      await tx.episodeTag.createMany({ data: (batch.rows as Array<{ episodeId: string; kind: string; value: string }>).map((t) => ({ scopeId, ...t })) });
      return;
    case 'memories':
      await tx.memory.createMany({
        data: (batch.rows as Memory[]).map((m) => ({
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
      });
      return;
    case 'memorySources':
      await tx.memorySource.createMany({ data: (batch.rows as Array<{ memoryId: string; episodeId: string }>).map((r) => ({ scopeId, ...r })) });
      return;
    case 'memoryLinks':
      await tx.memoryLink.createMany({
        data: (batch.rows as ScopeExport['memoryLinks']).map((l) => ({
          id: l.id,
          scopeId,
          fromId: l.fromId,
          toId: l.toId,
          kind: l.kind,
          score: l.score,
          reason: l.reason,
          createdAt: date(l.createdAt),
        })),
      });
      return;
    case 'entities':
      await tx.entity.createMany({
        data: (batch.rows as Entity[]).map((e) => ({
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
      });
      return;
    case 'entityObservations':
      await tx.entityObservation.createMany({
        data: (batch.rows as Observation[]).map((o) => ({
          id: o.id,
          scopeId,
          entityId: o.entityId,
          episodeId: o.episodeId,
          content: o.content,
          consolidated: o.consolidated,
          createdAt: date(o.createdAt),
        })),
      });
      return;
    case 'digests':
      await tx.digest.createMany({
        data: (batch.rows as ScopeExport['digests']).map((d) => ({
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
      });
      return;
    case 'reminders':
      await tx.reminder.createMany({
        data: (batch.rows as ScopeExport['reminders']).map((r) => ({
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
      });
      return;
    case 'sleepRuns':
      await tx.sleepRun.createMany({
        data: (batch.rows as ScopeExport['sleepRuns']).map((r) => ({
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
      });
      return;
    case 'auditEvents':
      await tx.auditEvent.createMany({
        data: (batch.rows as ScopeExport['auditEvents']).map((a) => ({
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
      });
      return;
    default: {
      const unwritten: never = batch.table;
      throw new Error(`no writer for the exported table ${String(unwritten)}`);
    }
  }
}
