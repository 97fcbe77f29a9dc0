/**
 * The words the scope data map (scope-data-map.ts) is written in: how a model's rows belong to a
 * scope, where they go in an export, and what forgetting and a purge do to them. Kept apart from
 * the map so the map reads as the list of models it is, each entry checked against these types.
 */

/** How a model's rows belong to a scope. */
export type ScopeKeying =
  /** The scope row itself. */
  | { readonly by: 'self' }
  /** A required `scopeId` column (every reference to another row also carries it). */
  | { readonly by: 'scopeId' }
  /** A nullable `scopeId`: some rows belong to no scope. */
  | { readonly by: 'optionalScopeId' }
  /** Not a person's data; `why` says what it is instead. */
  | { readonly by: 'none'; readonly why: string };

/**
 * Where a model's rows are in a scope export (scope-document.ts): the scope object, a section of
 * its own, nested in a parent's rows, or left out (with the reason docs/export.md gives).
 */
export type ExportPlace =
  | { readonly as: 'scope' }
  | { readonly as: 'section'; readonly section: ExportSection; readonly single?: true }
  /** In each `parent` row's `field`, without the column `key` that names the parent. */
  | { readonly as: 'nested'; readonly parent: string; readonly field: string; readonly key: string }
  | { readonly as: 'left out'; readonly why: string };

/**
 * What forgetting does to a column that holds words, when the words or a memory quoting them go:
 * the column is emptied or overwritten (`redact`), its row goes (`delete`), it is written again
 * from what is left (`rebuild`), or it stays, with the reason.
 */
export type ForgetAction = 'redact' | 'delete' | 'rebuild' | { readonly keep: string };

/** What a scope's purge (every memory, admin API `DELETE /scopes/:key/memories`) does to a model. */
export type PurgeAction =
  /** The rows go (`deleteMany` on the scope). */
  | 'delete'
  /** The rows go with a parent's (`onDelete: Cascade`). */
  | 'cascade'
  /** Rows that quote what was learned lose that text (redact-derived.ts, the audit's states). */
  | 'redact'
  /** Written again from what is left (the soul, the digests). */
  | 'rebuild'
  /** What the person said and the service's own bookkeeping stay. */
  | 'keep';

/** The description of one model. */
export interface ModelData {
  /** The model's name in prisma/models.prisma. */
  readonly model: string;
  /** The Prisma client's delegate for it (`prisma.<delegate>`). */
  readonly delegate: string;
  /** The name its rows are counted under (import report, migration verification). */
  readonly table: string;
  readonly scope: ScopeKeying;
  /** String columns that can hold people's words (messages, names, summaries, reasons). */
  readonly text: readonly string[];
  /** Json columns (opaque documents that can quote people's words). */
  readonly json: readonly string[];
  /** String columns that hold no one's words: ids, keys, kinds, statuses, hashes, provider names. */
  readonly plain: readonly string[];
  readonly exportPlace: ExportPlace;
  /** Columns of an exported model left out of the document, and why. */
  readonly notExported?: Readonly<Record<string, string>>;
  /** Whether migrate-store copies its rows (`false`: the reason it does not). */
  readonly migrated: true | { readonly no: string };
  /** Columns a copy under a new key sets to null: they bind the rows to the original person. */
  readonly clearedInCopy?: readonly string[];
  /** What forgetting by words does to each text and JSON column (every one is listed). */
  readonly forget: Readonly<Record<string, ForgetAction>>;
  readonly purge: PurgeAction;
}

/** The sections of a scope export that hold rows (the document's own names). */
export type ExportSection =
  | 'profile'
  | 'conversations'
  | 'episodes'
  | 'memories'
  | 'memoryLinks'
  | 'entities'
  | 'digests'
  | 'reminders'
  | 'sleepRuns'
  | 'auditEvents';
