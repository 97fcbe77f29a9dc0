/**
 * Writes a validated scope export into the database, table by table in foreign-key order, in
 * batches. Shared by the JSON import and the store migration, so a row is written one way
 * whichever path brought it.
 *
 * The full-text index follows through the database triggers. Vectors are not in the document:
 * rows arrive with `embeddedWith` null, which is exactly the embedding worker's queue.
 */
import type { ExportedTable } from '../memory/scopes/scope-data-map';
import type { Prisma } from '../storage/prisma';
import { supersessionOrder } from './import-validation';
import { date, dateOrNull, nullableJson, ROW_WRITERS } from './row-writers';
import type { ScopeExport } from './scope-document';

type Tx = Prisma.TransactionClient;

/** Rows per createMany. */
export const BATCH = 500;
/**
 * Options of the import transaction. Generous: a scope of 100,000 episodes takes tens of seconds
 * on a small machine.
 */
export const IMPORT_TRANSACTION = { timeout: 30 * 60_000, maxWait: 60_000 } as const;

const notAfterNow = (value: Date | null): Date | null => {
  const now = new Date();
  return value && value > now ? now : value;
};

/**
 * The tables of a document's rows: the exported models of the data map (scope-data-map.ts), whose
 * order is the foreign-key order {@link scopeBatches} yields them in. A model the map exports and
 * no writer of row-writers.ts writes fails to compile there.
 */
export type RowTable = ExportedTable;

/** Up to BATCH rows of one table: document rows, or the derived rows of tags, sources and observations. */
export interface RowBatch {
  readonly table: RowTable;
  readonly rows: readonly unknown[];
}

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
  // The table name came from a worker thread in the streamed import: checked, not trusted.
  const write = Object.hasOwn(ROW_WRITERS, batch.table) ? ROW_WRITERS[batch.table] : undefined;
  if (!write) throw new Error(`no writer for the exported table ${String(batch.table)}`);
  await write(tx, batch.rows, scopeId);
}
