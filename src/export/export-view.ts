/**
 * A scope's export as the forget sees it: every line of its Markdown rendering and every text of
 * its JSON document, read through the forget's transaction before and after the work, so the
 * export files Nocturne wrote lose exactly what the rows lost (memory/forget/export-gone.ts
 * compares the two). Here, beside the formats it renders; the forget service is given it.
 */
import type { ExportView } from '../memory/forget/export-gone';
import { exportScope, type ScopeReader } from './json-export';
import { renderMarkdownExport } from './markdown-export';
import type { ScopeExport } from './scope-document';

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
