/**
 * The second pass of a streamed import: the rows of a document checked by the first pass
 * (`stream-validation.ts`), read again from the file one element at a time and handed out in
 * batches, table by table in foreign-key order, as `scopeBatches` does for a document in memory.
 * Tags follow each batch of episodes and observations each batch of entities (their parents are
 * written by then); memories are read by their byte ranges in supersession order.
 *
 * Each row goes through its zod schema again: the rows written are the rows checked, even if the
 * file changed in between.
 */
import type { z } from 'zod';
import type { ImportFileReader } from './import-file';
import type { RowBatch, RowTable } from './insert-scope';
import { JsonScanner } from './json-scanner';
import type { IdMapper } from './scope-copy';
import { rowSchemaOf, scopeExportSchema, type ScopeExport } from './scope-document';
import type { ImportPlan, RowSection, Span } from './stream-plan';

type Row<S extends RowSection> = ScopeExport[S][number];

/** The elements of the array at `span`, parsed and checked. */
function* elements<S extends RowSection>(file: ImportFileReader, span: Span | null, section: S): Generator<Row<S>> {
  // A section an older document does not have (the schema's default) holds no rows.
  if (span === null) return;
  const schema = rowSchemaOf(section) as z.ZodType<Row<S>>;
  const scanner = new JsonScanner(file.from(span.start), span.start);
  scanner.expect(0x5b);
  if (scanner.take(0x5d)) return;
  do {
    yield schema.parse(JSON.parse(scanner.captureValue().bytes.toString('utf8')));
  } while (scanner.take(0x2c));
}

/** Groups `rows` into batches of `size` of `table`. */
function* batched(table: RowTable, rows: Iterable<unknown>, size: number): Generator<RowBatch> {
  let batch: unknown[] = [];
  for (const row of rows) {
    batch.push(row);
    if (batch.length >= size) {
      yield { table, rows: batch };
      batch = [];
    }
  }
  if (batch.length > 0) yield { table, rows: batch };
}

function* mapped<T>(rows: Iterable<T>, map: ((row: T) => T) | undefined): Generator<T> {
  for (const row of rows) yield map ? map(row) : row;
}

/** Batches of a parent table, each followed by the batches of its children. */
function* withChildren<T>(table: RowTable, rows: Iterable<T>, childTable: RowTable, children: (row: T) => unknown[], size: number): Generator<RowBatch> {
  for (const batch of batched(table, rows, size)) {
    yield batch;
    yield* batched(childTable, (batch.rows as T[]).flatMap(children), size);
  }
}

/** Memories in the plan's order, each read from its byte range. */
function* memoriesInOrder(file: ImportFileReader, plan: ImportPlan): Generator<Row<'memories'>> {
  const schema = scopeExportSchema.shape.memories.element;
  for (const index of plan.memoryOrder) {
    const span = plan.memorySpans[index]!;
    yield schema.parse(JSON.parse(file.range(span.start, span.end).toString('utf8')));
  }
}

/**
 * Every row of the planned document (all but the scope row) in batches of `size`, in foreign-key
 * order; with `ids`, under new ids (a copy).
 */
export function* planBatches(file: ImportFileReader, plan: ImportPlan, size: number, ids?: IdMapper): Generator<RowBatch> {
  const { sections } = plan;
  if (plan.profile) yield { table: 'profile', rows: [ids ? ids.profile(plan.profile) : plan.profile] };
  yield* batched('conversations', mapped(elements(file, sections.conversations, 'conversations'), ids?.conversation), size);
  yield* withChildren(
    'episodes',
    mapped(elements(file, sections.episodes, 'episodes'), ids?.episode),
    'episodeTags',
    (e) => e.tags.map((t) => ({ episodeId: e.id, kind: t.kind, value: t.value })),
    size,
  );
  yield* batched('memories', mapped(memoriesInOrder(file, plan), ids?.memory), size);
  const sources = function* () {
    for (const m of mapped(elements(file, sections.memories, 'memories'), ids?.memory))
      for (const episodeId of m.sourceEpisodeIds) yield { memoryId: m.id, episodeId };
  };
  yield* batched('memorySources', sources(), size);
  yield* batched('memoryLinks', mapped(elements(file, sections.memoryLinks, 'memoryLinks'), ids?.memoryLink), size);
  yield* withChildren(
    'entities',
    mapped(elements(file, sections.entities, 'entities'), ids?.entity),
    'entityObservations',
    (e) => e.observations.map((o) => ({ ...o, entityId: e.id })),
    size,
  );
  yield* batched('digests', mapped(elements(file, sections.digests, 'digests'), ids?.digest), size);
  yield* batched('reminders', mapped(elements(file, sections.reminders, 'reminders'), ids?.reminder), size);
  yield* batched('sleepRuns', mapped(elements(file, sections.sleepRuns, 'sleepRuns'), ids?.sleepRun), size);
  yield* batched('auditEvents', mapped(elements(file, sections.auditEvents, 'auditEvents'), ids?.auditEvent), size);
}
