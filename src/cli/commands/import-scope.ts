/**
 * `import-scope FILE [--as KEY]`: imports a JSON scope export (from `export`). Without --as the
 * scope is reproduced exactly (ids, timestamps, history) and must not be in the database yet, or
 * be empty; with --as it is imported as a copy with new ids under that key. The file is checked
 * first and written in one transaction: an invalid file or a clash writes nothing (exit status 2).
 * Named apart from `import`, which reads episodes from JSON Lines.
 */
import fs from 'node:fs/promises';
import { ValidationError } from '../../shared/errors';
import { writeResult, type Command } from '../command';
import { plural } from '../../shared/plural';

async function readDocument(file: string): Promise<unknown> {
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await fs.readFile(file, 'utf8');
  } catch {
    throw new ValidationError(`cannot read ${file}: no such file`, { code: 'cli.no_file' });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError(`${file} is not valid JSON (${(error as Error).message}); nothing was imported`, {
      code: 'import.invalid_json',
      hint: 'Import a file written by `npm run cli -- export --scope KEY --out FILE`.',
    });
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The `import-scope` command. */
export const importScopeCommand: Command = {
  name: 'import-scope',
  usage: 'import-scope FILE [--as KEY] [--json]',
  summary: 'import a scope from a JSON export (exact; or a copy with new ids under --as KEY)',
  options: { as: { type: 'string' } },
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new ValidationError('import-scope needs a file: npm run cli -- import-scope FILE [--as KEY]', { code: 'cli.usage' });
    const as = ctx.values.as as string | undefined;
    const value = await readDocument(file);
    const core = await ctx.core();
    const result = await core.archive.import(value, { mode: as ? 'copy' : 'exact', scopeKey: as });
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
