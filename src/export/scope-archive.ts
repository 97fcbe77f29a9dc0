/**
 * A scope's memory as files a person keeps or an operator moves: the complete JSON export (the
 * import format), its Markdown rendering, and importing an export back. Exports are redacted by
 * the exporter (secrets replaced); imports are checked whole before anything is written.
 */
import { exportScope } from './json-export';
import type { ImportFile } from './import-file';
import type { ImportOptions, ImportResult } from './json-import';
import type { ScopeExport } from './scope-document';
import type { PrismaClient } from '../storage/prisma';
import type { EpisodeLimits } from '../memory/episodes/episode-limits';

export type { ImportFile, ImportOptions, ImportResult, ScopeExport };

export interface ScopeArchive {
  /** The scope's export document (secrets redacted). */
  export(scopeId: string): Promise<ScopeExport>;
  /** Imports an export document (validated whole, episodes by the ingest limits; a clash or a bad document writes nothing). */
  import(document: unknown, options?: ImportOptions): Promise<ImportResult>;
  /**
   * The same from an export file, streamed off the event loop with bounded memory (the admin
   * API's spooled body, the CLI's file).
   */
  importFile(file: ImportFile, options?: ImportOptions): Promise<ImportResult>;
}

/**
 * The archive of a store. `limits` are the ones every door applies to a message (the config's
 * EPISODE_MAX_BYTES): an export is one more way for messages to come in.
 */
export function createScopeArchive(prisma: PrismaClient, limits: EpisodeLimits): ScopeArchive {
  // Every process builds the archive and few import: the import's modules (the whole-document
  // checks, the row writers, the reading thread) are loaded by the first import.
  const importer = () => import('./json-import');
  return {
    export: (scopeId) => exportScope(prisma, scopeId),
    import: async (document, options) => (await importer()).importScope(prisma, document, limits, options),
    importFile: async (file, options) => (await importer()).importScopeFile(prisma, file, limits, options),
  };
}
