/**
 * The map of a scope's data (src/memory/scopes/scope-data-map.ts) against the real schema: the
 * data models Prisma generated both clients from, and prisma/models.prisma itself. A model, or a
 * String or Json column, the map does not classify fails here, naming it; so does a column the
 * export document does not carry without the map saying why. The checks are shown to fail on a
 * copy of the schema with a column added.
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import type { z } from 'zod';
import { scopeBatches } from '../../../src/export/insert-scope';
import { countScopeExport, scopeExportSchema, type ScopeExport } from '../../../src/export/scope-document';
import { PrismaClient as PostgresClient } from '../../../src/generated/postgres/client';
import { PrismaClient as SqliteClient } from '../../../src/generated/sqlite/client';
import { SCOPE_DATA_MAP, type ModelData } from '../../../src/memory/scopes/scope-data-map';
import { EXPORTED_MODELS } from '../../../src/memory/scopes/scope-data-walk';

/** A field as Prisma's runtime data model describes it (plus nullability, read from the schema text). */
interface Field {
  readonly name: string;
  readonly kind: string;
  readonly type: string;
  readonly optional?: boolean;
}
type DataModel = Record<string, readonly Field[]>;

const SCHEMA_FILE = path.join(__dirname, '../../../prisma/models.prisma');
const SCALARS = new Set(['String', 'Int', 'Float', 'Boolean', 'DateTime', 'Json', 'BigInt', 'Decimal', 'Bytes']);

/** The data model a generated client was built from (its runtime copy of the schema). */
function clientDataModel(client: object): DataModel {
  const models = (client as { _runtimeDataModel: { models: Record<string, { fields: Field[] }> } })._runtimeDataModel.models;
  return Object.fromEntries(Object.entries(models).map(([name, m]) => [name, m.fields.map(({ name: n, kind, type }) => ({ name: n, kind, type }))]));
}

/** Models and fields of a schema's text: `model X {` blocks, one field per line. */
function parseSchema(text: string): DataModel {
  const out: Record<string, Field[]> = {};
  let current: Field[] | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    const open = /^model\s+(\w+)\s*\{/.exec(line);
    if (open) {
      current = out[open[1]!] = [];
      continue;
    }
    if (line === '}') current = null;
    if (!current || line === '' || line.startsWith('@@')) continue;
    const field = /^(\w+)\s+(\w+)(\[\]|\?)?/.exec(line);
    if (!field) continue;
    const [, name, type, modifier] = field;
    current.push({ name: name!, type: type!, kind: SCALARS.has(type!) ? 'scalar' : 'object', optional: modifier === '?' });
  }
  return out;
}

/** The keys of the document's object for a section (nullable, defaulted and arrays unwrapped). */
function keysOf(schema: z.ZodType): string[] {
  const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; element?: z.ZodType; shape?: Record<string, z.ZodType> } }).def;
  if (def.type === 'nullable' || def.type === 'default') return keysOf(def.innerType!);
  if (def.type === 'array') return keysOf(def.element!);
  if (def.type === 'object') return Object.keys(def.shape!);
  return [];
}

/** The export document's keys for a model's rows, or null when the model is not exported. */
function documentKeys(entry: ModelData): string[] | null {
  const shape = scopeExportSchema.shape as Record<string, z.ZodType>;
  const place = entry.exportPlace;
  if (place.as === 'scope') return keysOf(shape.scope!);
  if (place.as === 'section') return keysOf(shape[place.section]!);
  if (place.as === 'nested') {
    const parent = SCOPE_DATA_MAP.find((m) => m.model === place.parent)!;
    const parentShape = shape[(parent.exportPlace as { section: string }).section]!;
    const element = (keysOf(parentShape).includes(place.field) ? innerShape(parentShape)[place.field] : undefined)!;
    return keysOf(element);
  }
  return null;
}

function innerShape(schema: z.ZodType): Record<string, z.ZodType> {
  const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; element?: z.ZodType; shape?: Record<string, z.ZodType> } }).def;
  if (def.type === 'nullable' || def.type === 'default') return innerShape(def.innerType!);
  if (def.type === 'array') return innerShape(def.element!);
  return def.shape!;
}

/** Everything the map fails to cover in `model` (empty when it covers it all). */
function uncovered(model: DataModel, map: readonly ModelData[] = SCOPE_DATA_MAP): string[] {
  const problems: string[] = [];
  const byName = new Map(map.map((m) => [m.model, m]));
  for (const name of Object.keys(model)) if (!byName.has(name)) problems.push(`model ${name} is not in the map`);
  for (const entry of map) {
    const fields = model[entry.model];
    if (!fields) {
      problems.push(`model ${entry.model} of the map is not in the schema`);
      continue;
    }
    const scalar = new Map(fields.filter((f) => f.kind === 'scalar').map((f) => [f.name, f]));
    const strings = [...scalar.values()].filter((f) => f.type === 'String').map((f) => f.name);
    const jsons = [...scalar.values()].filter((f) => f.type === 'Json').map((f) => f.name);
    const listed = [...entry.text, ...entry.plain];
    for (const column of strings) if (!listed.includes(column)) problems.push(`${entry.model}.${column} (String) is neither text nor plain in the map`);
    for (const column of jsons) if (!entry.json.includes(column)) problems.push(`${entry.model}.${column} (Json) is not among the map's JSON columns`);
    for (const column of listed) if (!strings.includes(column)) problems.push(`${entry.model}.${column} of the map is not a String column`);
    for (const column of entry.json) if (!jsons.includes(column)) problems.push(`${entry.model}.${column} of the map is not a Json column`);
    for (const column of [...entry.text, ...entry.json])
      if (!(column in entry.forget)) problems.push(`${entry.model}.${column}: the map does not say what forgetting does to it`);
    for (const column of Object.keys(entry.forget))
      if (![...entry.text, ...entry.json].includes(column)) problems.push(`${entry.model}.${column}: forget entry for a column that is not text or JSON`);
    const scopeId = scalar.get('scopeId');
    const keyed = entry.scope.by;
    if ((keyed === 'scopeId' || keyed === 'optionalScopeId') !== (scopeId !== undefined))
      problems.push(`${entry.model}: keyed ${keyed} but ${scopeId ? 'has' : 'has no'} scopeId`);
    if (scopeId?.optional !== undefined && scopeId.optional !== (keyed === 'optionalScopeId'))
      problems.push(`${entry.model}: scopeId nullability differs from ${keyed}`);
    // Every column of an exported model is in the document, unless the map says why not.
    const keys = documentKeys(entry);
    if (keys !== null) {
      const skipped = new Set(['scopeId', ...Object.keys(entry.notExported ?? {}), ...(entry.exportPlace.as === 'nested' ? [entry.exportPlace.key] : [])]);
      const idList = entry.exportPlace.as === 'nested' && keys.length === 0;
      for (const column of scalar.keys()) {
        if (!skipped.has(column) && !idList && !keys.includes(column))
          problems.push(`${entry.model}.${column} is not in the export document and the map does not say why`);
      }
    }
  }
  return problems;
}

describe('the map of a scope\u2019s data against the schema', () => {
  const sqlite = clientDataModel(new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: ':memory:' }) }));
  // Never connected: the client is built only to read the data model it was generated from.
  const postgres = clientDataModel(new PostgresClient({ adapter: new PrismaPg({ connectionString: 'postgresql://unused@127.0.0.1:1/unused' }) }));
  const schemaText = fs.readFileSync(SCHEMA_FILE, 'utf8');

  it('covers every model and every text and JSON column of both generated clients', () => {
    expect(Object.keys(sqlite).length).toBeGreaterThan(10);
    expect(uncovered(sqlite)).toEqual([]);
    expect(uncovered(postgres)).toEqual([]);
  });

  it('covers prisma/models.prisma as written (the generated clients are not stale), nullability included', () => {
    const parsed = parseSchema(schemaText);
    const names = (model: DataModel) => Object.fromEntries(Object.entries(model).map(([n, fields]) => [n, fields.map((f) => `${f.name}:${f.type}`)]));
    expect(names(parsed)).toEqual(names(sqlite));
    expect(uncovered(parsed)).toEqual([]);
  });

  it('fails when the schema gains a text column, a JSON column or a model the map does not cover', () => {
    const withColumn = schemaText.replace(/(model Episode \{\n)/, '$1  mood String?\n  feelings Json?\n');
    expect(uncovered(parseSchema(withColumn))).toEqual([
      'Episode.mood (String) is neither text nor plain in the map',
      "Episode.feelings (Json) is not among the map's JSON columns",
      'Episode.mood is not in the export document and the map does not say why',
      'Episode.feelings is not in the export document and the map does not say why',
    ]);
    const withModel = {
      ...sqlite,
      Bookmark: [
        { name: 'id', kind: 'scalar', type: 'String' },
        { name: 'scopeId', kind: 'scalar', type: 'String' },
      ],
    };
    expect(uncovered(withModel)).toEqual(['model Bookmark is not in the map']);
  });

  it('fails when an exported model gains a column the export document does not carry', () => {
    const withNumber = { ...sqlite, Memory: [...sqlite.Memory!, { name: 'pinnedRank', kind: 'scalar', type: 'Int' }] };
    expect(uncovered(withNumber)).toEqual(['Memory.pinnedRank is not in the export document and the map does not say why']);
  });

  it('fails when a column is left out of what forgetting reaches', () => {
    const map = SCOPE_DATA_MAP.map((m) => (m.model === 'Conversation' ? { ...m, forget: { summary: 'redact' as const } } : m));
    expect(uncovered(sqlite, map)).toEqual(['Conversation.state: the map does not say what forgetting does to it']);
  });

  it('an import writes, and counts, every exported table of the map, in the map\u2019s order', () => {
    // One row per table (scopeBatches and countScopeExport look at ids and nesting only).
    const doc = {
      profile: { soul: '', data: null, version: 1, updatedAt: '' },
      conversations: [{ id: 'c' }],
      episodes: [{ id: 'e', tags: [{ kind: 'topic', value: 'tea' }] }],
      memories: [{ id: 'm', supersededById: null, sourceEpisodeIds: ['e'] }],
      memoryLinks: [{ id: 'l' }],
      entities: [{ id: 'n', observations: [{ id: 'o' }] }],
      digests: [{ id: 'd' }],
      reminders: [{ id: 'r' }],
      sleepRuns: [{ id: 's' }],
      auditEvents: [{ id: 'a' }],
    } as unknown as ScopeExport;
    const tables = EXPORTED_MODELS.map((m) => m.table);
    expect([...scopeBatches(doc)].map((b) => b.table)).toEqual(tables);
    expect(countScopeExport(doc)).toEqual(Object.fromEntries(tables.map((t) => [t, 1])));
  });
});
