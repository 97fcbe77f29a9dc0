/**
 * The code that walks the scope data map (scope-data-map.ts): the lists of models export, import,
 * store migration and purge go through, and the lookups of one model's entry, its Prisma delegate
 * and the columns forgetting by words redacts. Kept apart from the map's declaration so that the
 * map is only the description of a person's data, and what is derived from it is read here.
 */
import {
  type ExportedEntry,
  type MigratedEntry,
  type ModelEntry,
  SCOPE_DATA_MAP,
  type ScopeModelName,
  type SectionEntry,
  type WordColumn,
} from './scope-data-map';
import type { ExportSection, ForgetAction } from './scope-data-types';

/** The map's entry for `model`. */
export function modelData<M extends ScopeModelName>(model: M): ModelEntry<M> {
  return SCOPE_DATA_MAP.find((m) => m.model === model) as ModelEntry<M>;
}

/** Models whose rows are in a scope export, in the map's (foreign-key) order. */
export const EXPORTED_MODELS: readonly ExportedEntry[] = SCOPE_DATA_MAP.filter(
  (m): m is ExportedEntry => m.exportPlace.as === 'section' || m.exportPlace.as === 'nested',
);

/** Exported models with a section of rows with ids, in the map's (and the document's) order. */
export const SECTION_MODELS: readonly SectionEntry[] = EXPORTED_MODELS.filter(
  (m): m is SectionEntry => m.exportPlace.as === 'section' && m.exportPlace.section !== 'profile',
);

/** Models a store migration copies and verifies per scope: the exported ones and the scope's LlmCall rows. */
export const MIGRATED_MODELS: readonly MigratedEntry[] = SCOPE_DATA_MAP.filter(
  (m): m is MigratedEntry => m.migrated === true && (m.scope.by === 'scopeId' || m.scope.by === 'optionalScopeId'),
);

/** Models whose rows a purge deletes outright (the rows of `cascade` models go with them). */
export const PURGE_DELETED = SCOPE_DATA_MAP.filter((m) => m.purge === 'delete');

/** The names of JSON columns of exported models and the scope (what an export redacts by key name too). */
export const EXPORTED_JSON_COLUMNS: ReadonlySet<string> = new Set(
  SCOPE_DATA_MAP.filter((m) => m.exportPlace.as !== 'left out').flatMap((m) => m.json as readonly string[]),
);

/** The export section holding the rows of `model` (undefined when they are not in a section). */
export function sectionOf(model: string): ExportSection | undefined {
  const place = SCOPE_DATA_MAP.find((m) => m.model === model)?.exportPlace;
  return place?.as === 'section' ? place.section : undefined;
}

/** What walking the map needs of a model's Prisma delegate: the rows of one scope. */
export interface ScopedDelegate {
  count(args: { where: { scopeId: string } }): Promise<number>;
  findMany(args: { where: { scopeId: string } }): Promise<unknown[]>;
  deleteMany(args: { where: { scopeId: string } }): Promise<{ count: number }>;
}

/** The delegate of `entry` on a Prisma client or transaction client. */
export function delegateOf(client: object, entry: { readonly delegate: string }): ScopedDelegate {
  const delegate = (client as Record<string, ScopedDelegate | undefined>)[entry.delegate];
  if (!delegate) throw new Error(`the Prisma client has no delegate ${entry.delegate}`);
  return delegate;
}

/** The text and JSON columns forgetting by words redacts in `model` (its `redact` entries). */
export function redactedColumns<M extends ScopeModelName>(model: M): Array<WordColumn<M>> {
  const entry = modelData(model);
  return Object.entries(entry.forget as Record<string, ForgetAction>)
    .filter(([, action]) => action === 'redact')
    .map(([column]) => column as WordColumn<M>);
}

/** Whether a column of `model` is a JSON column (redacted to a marker) or text (redacted to null). */
export function isJsonColumn(model: ScopeModelName, column: string): boolean {
  return (modelData(model).json as readonly string[]).includes(column);
}
