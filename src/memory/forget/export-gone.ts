/**
 * What a forget changed in the scope, as its export files would show it: the scope's export read
 * inside the forget's transaction before the work and again after it. A line of the Markdown
 * rendering that the export gave before and no longer gives (a message now replaced by the
 * placeholder, an earlier version that went with its chain, an entity deleted because all it was
 * known from is forgotten, a soul line) is text the forget removed; so is a text of the JSON
 * document (a message, a memory, a summary, a name) that is no longer in it. The export files
 * Nocturne wrote earlier lose exactly those (export-files.ts), whether or not the text holds the
 * words or quotes the memory: the forget reaches the files as far as it reached the rows.
 *
 * Read only when the scope has export files: it costs two reads of the whole scope.
 */
import type { Tx } from './redact-derived';

/** The Markdown lines and JSON texts of a scope's export at one moment. */
export interface ExportView {
  readonly lines: ReadonlySet<string>;
  readonly strings: ReadonlySet<string>;
}

/**
 * Lines of the rendering that say nothing learned or said (titles, counts, separators): they
 * change with any forget (a count drops) and are never taken out of a file for that.
 */
const FRAME_LINE = /^(?:$|#|---$|<!-- |Daily log of `|Long-term memory of (?:the scope )?`|\d+ current memor|_)/;

/**
 * Reads a scope's export as an {@link ExportView} through the forget's transaction. The export
 * formats are not the domain's (src/export/export-view.ts renders them); the composition root
 * gives the forget service this reader.
 */
export type ExportViewReader = (db: Tx, scopeId: string, defaultTimeZone: string) => Promise<ExportView>;

/** What `before` held and `after` no longer holds (frame lines left out). */
export function goneBetween(before: ExportView, after: ExportView): { goneLines: Set<string>; goneStrings: Set<string> } {
  const goneLines = new Set([...before.lines].filter((line) => !after.lines.has(line) && !FRAME_LINE.test(line)));
  const goneStrings = new Set([...before.strings].filter((text) => !after.strings.has(text)));
  return { goneLines, goneStrings };
}
