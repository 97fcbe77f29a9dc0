/**
 * `import-scope FILE [--as KEY]`: imports a JSON scope export (from `export`). Without --as the
 * scope is reproduced exactly (ids, timestamps, history) and must not be in the database yet, or
 * be empty; with --as it is imported as a copy with new ids under that key. The file is checked
 * first and written in one transaction: an invalid file or a clash writes nothing (exit status 2).
 * Named apart from `import`, which reads episodes from JSON Lines.
 */
import fs from 'node:fs/promises';
import { removeImportFile, spoolToFile, type ImportFile } from '../../export/import-file';
import type { ImportResult, ScopeArchive } from '../../export/scope-archive';
import { AppError, ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { plural } from '../../shared/plural';

/** Standard input has no size of its own to keep to; this is the admin API's limit, times four. */
const STDIN_LIMIT = 1024 * 1024 * 1024;

/** `file`, checked readable, or standard input (`-`) spooled to an encrypted temporary file. */
async function openSource(file: string): Promise<ImportFile> {
  try {
    if (file === '-') return await spoolToFile(process.stdin, { limit: STDIN_LIMIT });
    await fs.access(file, fs.constants.R_OK);
    return { path: file };
  } catch {
    throw new ValidationError(`cannot read ${file}: no such file`, { code: 'cli.no_file' });
  }
}

/** Imports `source` streamed, as the admin API does: memory does not grow with the file. */
async function importFrom(
  archive: () => Promise<ScopeArchive>,
  file: string,
  source: ImportFile,
  options: { mode: 'exact' | 'copy'; scopeKey?: string },
): Promise<ImportResult> {
  try {
    return await (await archive()).importFile(source, options);
  } catch (error) {
    if (error instanceof AppError && error.code === 'import.invalid_json') {
      throw new ValidationError(`${file} is not valid JSON (${String(error.details?.syntax ?? error.message)}); nothing was imported`, {
        code: 'import.invalid_json',
        hint: 'Import a file written by `npm run cli -- export --scope KEY --out FILE`.',
      });
    }
    throw error;
  } finally {
    await removeImportFile(source);
  }
}

/** The `import-scope` command. */
export const importScopeCommand: CommandRunner = {
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new ValidationError('import-scope needs a file: npm run cli -- import-scope FILE [--as KEY]', { code: 'cli.usage' });
    const as = ctx.values.as as string | undefined;
    const source = await openSource(file);
    const result = await importFrom(async () => (await ctx.core()).archive, file, source, { mode: as ? 'copy' : 'exact', scopeKey: as });
    const { counts } = result;
    writeResult(
      ctx,
      { file, scope: result.scopeKey, scopeId: result.scopeId, mode: result.mode, counts },
      [
        `imported ${result.scopeKey}${result.mode === 'copy' ? ' (a copy with new ids)' : ''}: ${plural(counts.episodes, 'episode')}, ${plural(counts.memories, 'memory', 'memories')} (with history), ${plural(counts.memoryLinks, 'link')}, ${plural(counts.entities, 'entity', 'entities')}, ${plural(counts.digests, 'digest')}, ${plural(counts.auditEvents, 'audit event')}${counts.profile ? ', the soul' : ''}`,
        'searchable by keyword now; vectors are added in the background by `npm start`, or now by `npm run cli -- reindex`',
      ].join('\n'),
    );
    return 0;
  },
};
