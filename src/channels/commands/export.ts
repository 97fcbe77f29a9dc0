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

export { exportStem };

/** The two files of an export. */
export interface ExportFiles {
  /** The file name without extension: `nocturne-telegram-private-42`. */
  readonly stem: string;
  readonly json: Buffer;
  readonly markdown: Buffer;
  readonly memories: number;
  readonly messages: number;
}

/** Exports the scope: the JSON document and the Markdown to read, as bytes. */
export async function buildExportFiles(archive: Pick<ScopeArchive, 'export'>, scope: CommandScope): Promise<ExportFiles> {
  const doc = await archive.export(scope.id);
  return {
    stem: exportStem(scope.key),
    json: Buffer.from(serializeScopeExport(doc), 'utf8'),
    markdown: Buffer.from(joinMarkdownFiles(renderMarkdownExport(doc, { defaultTimeZone: scope.timeZone })), 'utf8'),
    memories: doc.memories.length,
    messages: doc.episodes.length,
  };
}

/** `21 memories, 340 messages`. */
export function exportCounts(files: Pick<ExportFiles, 'memories' | 'messages'>): string {
  return `${plural(files.memories, 'memory', 'memories')}, ${plural(files.messages, 'message')}`;
}
