/**
 * `/export`: the person's memory as two files they can keep — the JSON export (complete and
 * versioned; the import format, src/export/json-export.ts) and a Markdown rendering of it for
 * reading (MEMORY.md followed by the daily logs, src/export/markdown-export.ts). Secrets are
 * redacted by the scope archive's exporter. How the files reach the person (uploaded documents, files written
 * to a folder) is the channel's.
 */
import { exportStem } from '../../memory/archive/export-paths';
import { joinMarkdownFiles, renderMarkdownExport } from '../../export/markdown-export';
import { serializeScopeExport } from '../../export/scope-document';
import type { ScopeArchive } from '../../export/scope-archive';
import type { CommandScope } from './command-scope';
import { plural } from '../../shared/plural';
import { CONVERSATION_CATEGORY } from '../../memory/memories/categories';

export { exportStem };

/** The two files of an export. */
export interface ExportFiles {
  /** The file name without extension: `nocturne-telegram-private-42`. */
  readonly stem: string;
  readonly json: Buffer;
  readonly markdown: Buffer;
  /** Current memories: the ones `/memories` lists (the same rule: active, still true, not a conversation note). */
  readonly memories: number;
  /** What else the file keeps: earlier versions, faded memories and notes of conversations. */
  readonly otherVersions?: number;
  readonly messages: number;
}

/**
 * Whether `/memories` lists the memory (memory-catalog.ts `page`): the caption counts these, so
 * "9 memories" is never followed by a list of 8. The file keeps the rest too (the history).
 */
function listed(m: { active: boolean; validTo: string | null; supersededById: string | null; category: string }): boolean {
  return m.active && m.validTo === null && m.supersededById === null && m.category !== CONVERSATION_CATEGORY;
}

/** Exports the scope: the JSON document and the Markdown to read, as bytes. */
export async function buildExportFiles(archive: Pick<ScopeArchive, 'export'>, scope: CommandScope): Promise<ExportFiles> {
  const doc = await archive.export(scope.id);
  return {
    stem: exportStem(scope.key),
    json: Buffer.from(serializeScopeExport(doc), 'utf8'),
    markdown: Buffer.from(joinMarkdownFiles(renderMarkdownExport(doc, { defaultTimeZone: scope.timeZone })), 'utf8'),
    memories: doc.memories.filter(listed).length,
    otherVersions: doc.memories.filter((m) => !listed(m)).length,
    messages: doc.episodes.length,
  };
}

/**
 * `21 memories, 340 messages`, or `21 memories, 340 messages, plus 3 kept as history` when the
 * file also holds earlier versions, faded memories or conversation notes, which `/memories` does not list.
 */
export function exportCounts(files: Pick<ExportFiles, 'memories' | 'messages' | 'otherVersions'>): string {
  const others = files.otherVersions ?? 0;
  const history = others > 0 ? `, plus ${others} kept as history` : '';
  return `${plural(files.memories, 'memory', 'memories')}, ${plural(files.messages, 'message')}${history}`;
}
