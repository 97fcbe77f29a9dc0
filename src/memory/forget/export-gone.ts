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
import { exportScope, type ScopeReader } from '../../export/json-export';
import { renderMarkdownExport } from '../../export/markdown-export';
import type { ScopeExport } from '../../export/scope-document';

/** The Markdown lines and JSON texts of a scope's export at one moment. */
export interface ExportView {
  readonly lines: ReadonlySet<string>;
  readonly strings: ReadonlySet<string>;
}

/**
 * Lines of the rendering that say nothing learned or said (titles, counts, separators): they
 * change with any forget (a count drops) and are never taken out of a file for that.
 */
const FRAME_LINE = /^(?:$|#|---$|<!-- |Daily log of `|Long-term memory of the scope `|\d+ current memor|_)/;

/**
 * A text of the JSON document counts when it has a space in it: what people and the model wrote
 * (messages, memories, summaries, observations, the soul, names of two words). Ids, times, hashes
 * and kinds have none, and are not what a forget removes.
 */
function isText(value: string): boolean {
  return /\s/.test(value.trim());
}

function collectStrings(value: unknown, out: Set<string>): void {
  if (typeof value === 'string') {
    if (isText(value)) out.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectStrings(item, out);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (isText(key)) out.add(key);
      collectStrings(item, out);
    }
  }
}

function viewOf(doc: ScopeExport, defaultTimeZone: string): ExportView {
  const lines = new Set<string>();
  for (const text of renderMarkdownExport(doc, { defaultTimeZone }).values()) for (const line of text.split('\n')) lines.add(line);
  const strings = new Set<string>();
  collectStrings(doc, strings);
  return { lines, strings };
}

/** The scope's export as it is now, read through `db` (the forget's transaction). */
export async function readExportView(db: ScopeReader, scopeId: string, defaultTimeZone: string): Promise<ExportView> {
  return viewOf(await exportScope(db, scopeId), defaultTimeZone);
}

/** What `before` held and `after` no longer holds (frame lines left out). */
export function goneBetween(before: ExportView, after: ExportView): { goneLines: Set<string>; goneStrings: Set<string> } {
  const goneLines = new Set([...before.lines].filter((line) => !after.lines.has(line) && !FRAME_LINE.test(line)));
  const goneStrings = new Set([...before.strings].filter((text) => !after.strings.has(text)));
  return { goneLines, goneStrings };
}
