/**
 * The JSON export of one scope: a versioned document with everything a person's memory is made
 * of (see docs/export.md), its zod schema, and the one way it is written as text.
 *
 * The schema is the import's gate: a document that does not match it is refused before anything
 * is written, with the path of every bad field. The TypeScript type is inferred from the schema,
 * so the exporter cannot produce a field the importer would not accept.
 *
 * Byte-identical round trips rest on three rules: every array is sorted by id (or by its natural
 * key), every object is built with a fixed key order, and opaque JSON values (settings, metadata,
 * audit states) are written with sorted keys, because PostgreSQL's jsonb does not keep key order.
 */
import { z } from 'zod';
import type { ExportedTable, RowSectionName } from '../memory/scopes/scope-data-map';
import { EXPORTED_MODELS, sectionOf } from '../memory/scopes/scope-data-walk';

/** What the `format` field of every export says, so a stray JSON file is recognised as not ours. */
export const SCOPE_EXPORT_FORMAT = 'nocturne.scope-export';
/** The version this code writes and reads; a change to the shape gets a new number. */
export const SCOPE_EXPORT_VERSION = 1;

const id = z.string().min(1).max(200);
const timestamp = z.iso.datetime({ message: 'must be an ISO 8601 UTC timestamp such as 2024-02-01T10:00:00.000Z' });
const nullableTimestamp = timestamp.nullable();
const json = z.json();
const nullableJson = json.nullable();
const int = z.int().min(-2_147_483_648).max(2_147_483_647);
const score = z.number();

const scopeSchema = z.strictObject({
  id,
  key: z.string().min(1).max(500),
  channel: z.string().min(1),
  kind: z.string().min(1),
  title: z.string().nullable(),
  ownerId: z.string().nullable(),
  timezone: z.string().nullable(),
  paused: z.boolean(),
  settings: nullableJson,
  lastMessageAt: nullableTimestamp,
  createdAt: timestamp,
  updatedAt: timestamp,
});

const profileSchema = z.strictObject({
  soul: z.string(),
  data: nullableJson,
  version: int,
  updatedAt: timestamp,
});

const conversationSchema = z.strictObject({
  id,
  status: z.string().min(1),
  startedAt: timestamp,
  lastActivityAt: timestamp,
  endedAt: nullableTimestamp,
  endReason: z.string().nullable(),
  summary: z.string().nullable(),
  state: nullableJson,
});

const episodeTagSchema = z.strictObject({ kind: z.string().min(1), value: z.string() });

const episodeSchema = z.strictObject({
  id,
  channel: z.string().min(1),
  role: z.string().min(1),
  author: z.string().nullable(),
  // Absent from documents written before speakers were recorded.
  authorId: z.string().nullable().optional(),
  content: z.string(),
  summary: z.string().nullable(),
  timestamp,
  conversationId: z.string().nullable(),
  turn: int.nullable(),
  externalId: z.string().nullable(),
  metadata: nullableJson,
  importance: score,
  importanceSource: z.string().min(1),
  consolidated: z.boolean(),
  consolidationAttempts: int,
  consolidatedAt: nullableTimestamp,
  contentHash: z.string(),
  createdAt: timestamp,
  tags: z.array(episodeTagSchema),
});

const memorySchema = z.strictObject({
  id,
  category: z.string().min(1),
  content: z.string(),
  // Absent from documents written before speakers were recorded.
  subjectId: z.string().nullable().optional(),
  subjectName: z.string().nullable().optional(),
  confidence: score,
  importance: score,
  active: z.boolean(),
  reinforcementCount: int,
  lastReinforcedAt: timestamp,
  sourceType: z.string().min(1),
  sourceTrust: score,
  validFrom: timestamp,
  validTo: nullableTimestamp,
  supersededById: id.nullable(),
  linkedAt: nullableTimestamp,
  decaySteps: int,
  accessCount: int,
  lastAccessedAt: nullableTimestamp,
  // Absent from documents written before memories could be pinned: not pinned.
  pinned: z.boolean().optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
  /** The episodes it was learned from (MemorySource rows), sorted. */
  sourceEpisodeIds: z.array(id),
});

const memoryLinkSchema = z.strictObject({
  id,
  fromId: id,
  toId: id,
  kind: z.string().min(1),
  score: score.nullable(),
  reason: z.string().nullable(),
  createdAt: timestamp,
});

const entityObservationSchema = z.strictObject({
  id,
  episodeId: z.string().nullable(),
  content: z.string(),
  consolidated: z.boolean(),
  createdAt: timestamp,
});

const entitySchema = z.strictObject({
  id,
  key: z.string().min(1),
  name: z.string(),
  kind: z.string().min(1),
  attributes: nullableJson,
  favorability: score,
  interactionCount: int,
  createdAt: timestamp,
  updatedAt: timestamp,
  observations: z.array(entityObservationSchema),
});

const digestSchema = z.strictObject({
  id,
  periodStart: timestamp,
  periodEnd: timestamp,
  content: z.string(),
  items: json,
  status: z.string().min(1),
  attempts: int,
  sentAt: nullableTimestamp,
  createdAt: timestamp,
});

const reminderSchema = z.strictObject({
  id,
  text: z.string(),
  dueAt: timestamp,
  channel: z.string().min(1),
  status: z.string().min(1),
  attempts: int,
  late: z.boolean(),
  sentAt: nullableTimestamp,
  createdAt: timestamp,
});

const sleepRunSchema = z.strictObject({
  id,
  kind: z.string().min(1),
  status: z.string().min(1),
  startedAt: timestamp,
  finishedAt: nullableTimestamp,
  episodeCount: int,
  llmCalls: int,
  inputTokens: int,
  outputTokens: int,
  stats: nullableJson,
  error: z.string().nullable(),
});

const auditEventSchema = z.strictObject({
  id,
  runId: z.string().nullable(),
  action: z.string().min(1),
  subjectType: z.string().min(1),
  subjectId: z.string().nullable(),
  before: nullableJson,
  after: nullableJson,
  reason: z.string().nullable(),
  createdAt: timestamp,
});

/** The whole document. Field order here is the order in the written file. */
export const scopeExportSchema = z.strictObject({
  format: z.literal(SCOPE_EXPORT_FORMAT, { message: `must be "${SCOPE_EXPORT_FORMAT}" (is this a Nocturne scope export?)` }),
  version: z.literal(SCOPE_EXPORT_VERSION, { message: `must be ${SCOPE_EXPORT_VERSION}: this Nocturne reads version ${SCOPE_EXPORT_VERSION} exports` }),
  scope: scopeSchema,
  profile: profileSchema.nullable(),
  conversations: z.array(conversationSchema),
  episodes: z.array(episodeSchema),
  memories: z.array(memorySchema),
  memoryLinks: z.array(memoryLinkSchema),
  entities: z.array(entitySchema),
  digests: z.array(digestSchema),
  // Absent from documents written before reminders were exported: such a scope had none to carry.
  reminders: z.array(reminderSchema).default([]),
  sleepRuns: z.array(sleepRunSchema),
  auditEvents: z.array(auditEventSchema),
});

/**
 * The schema of one row of a section (streamed imports check rows one at a time). A section with
 * a default for older documents is unwrapped to its array first.
 */
export function rowSchemaOf(section: RowSectionName): z.ZodType {
  const field: z.ZodType = scopeExportSchema.shape[section];
  const array = field instanceof z.ZodDefault ? field.unwrap() : field;
  return (array as z.ZodArray<z.ZodType>).element;
}

/** One scope's complete export (see docs/export.md), as the schema accepts it. */
export type ScopeExport = z.infer<typeof scopeExportSchema>;
/** Parts of a {@link ScopeExport}, for code that renders them (Markdown). */
export type ExportedEpisode = ScopeExport['episodes'][number];
export type ExportedMemory = ScopeExport['memories'][number];

/** A JSON value as the schema accepts it. */
export type JsonValue = z.infer<typeof json>;

/** Binary (code unit) order: the same on every database and locale, unlike SQL ORDER BY on text. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts rows by `id` in binary order (a copy). */
export function byId<T extends { readonly id: string }>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => compareStrings(a.id, b.id));
}

/** The same JSON value with every object's keys sorted, recursively. */
export function canonicalJson(value: unknown): JsonValue {
  if (Array.isArray(value)) return value.map(canonicalJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const key of Object.keys(value).sort(compareStrings)) {
      const inner = (value as Record<string, unknown>)[key];
      if (inner !== undefined) out[key] = canonicalJson(inner);
    }
    return out;
  }
  return value as JsonValue;
}

/** The file text of an export: two-space indented JSON and a final newline. */
export function serializeScopeExport(doc: ScopeExport): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** Rows per table a document holds: every exported model of the data map (the names the store migration verifies). */
export type ScopeCounts = Readonly<Record<ExportedTable, number>>;

/**
 * Counts the rows of each table a document holds (the import's and the migration's report),
 * walking the data map: a section's rows, or the rows nested in each of a parent section's rows.
 */
export function countScopeExport(doc: ScopeExport): ScopeCounts {
  const section = (name: string): readonly unknown[] => {
    const value = (doc as unknown as Record<string, unknown>)[name];
    return Array.isArray(value) ? value : value ? [value] : [];
  };
  const counts = EXPORTED_MODELS.map((m) => {
    const place = m.exportPlace;
    if (place.as === 'section') return [m.table, section(place.section).length] as const;
    const nested = section(sectionOf(place.parent) ?? '').reduce<number>(
      (total, row) => total + ((row as Record<string, unknown[]>)[place.field]?.length ?? 0),
      0,
    );
    return [m.table, nested] as const;
  });
  return Object.fromEntries(counts) as ScopeCounts;
}
