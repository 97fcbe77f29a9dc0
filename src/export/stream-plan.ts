/**
 * What the two passes of a streamed import share: the arrays of rows, byte ranges of the file,
 * and the plan the first pass (`stream-validation.ts`) hands the second (`stream-rows.ts`) for a
 * valid document, so the second reads the rows again without holding the document.
 */
import type { RowSectionName } from '../memory/scopes/scope-data-map';
import { SECTION_MODELS } from '../memory/scopes/scope-data-walk';
import type { ScopeCounts, ScopeExport } from './scope-document';

/** The arrays of rows, in the schema's (and the export's) order: the data map's sections of rows with ids. */
export const ROW_SECTIONS: readonly RowSection[] = SECTION_MODELS.map((m) => m.exportPlace.section);
export type RowSection = RowSectionName;

/** A byte range of the file: [start, end). */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** What the second pass needs of a valid document. */
export interface ImportPlan {
  readonly scope: ScopeExport['scope'];
  readonly profile: ScopeExport['profile'];
  readonly counts: ScopeCounts;
  /**
   * Where each array of rows is in the file (from its `[` to after its `]`); null for a section
   * the document leaves out where the schema allows it (reminders, in documents older than them).
   */
  readonly sections: Readonly<Record<RowSection, Span | null>>;
  /** Where each memory is, in document order. */
  readonly memorySpans: readonly Span[];
  /** Memory indexes in the order they are written (each after the one that superseded it). */
  readonly memoryOrder: readonly number[];
  /** Every old id, in the order a copy's new ids are drawn (`createIdMapper`). */
  readonly oldIds: readonly string[];
}
