/**
 * `export --scope S [--format json|markdown] [--out PATH]`: one scope as a file a person keeps.
 * JSON (the complete, re-importable document) goes to stdout unless --out names a file; Markdown
 * (MEMORY.md plus memory/YYYY-MM-DD.md) is written to a folder: --out, or DATA_DIR/exports/<key>.
 * Secrets are redacted in both (see docs/export.md). Every file written is recorded first
 * (export-registry.ts), wherever it goes, so a later forget takes the forgotten text out of it;
 * JSON printed to stdout is the person's to keep and beyond that reach.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { exportFolderName } from '../../memory/archive/export-paths';
import { recordExportFiles } from '../../memory/archive/export-registry';
import { renderMarkdownExport, writeMarkdownExport } from '../../export/markdown-export';
import { countScopeExport, serializeScopeExport } from '../../export/scope-document';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';
import { plural } from '../../shared/plural';

const formats = ['json', 'markdown'] as const;
type Format = (typeof formats)[number];

/** The `export` command. */
export const exportCommand: CommandRunner = {
  async run(ctx) {
    const format = (ctx.values.format ?? 'json') as Format;
    if (!formats.includes(format)) throw new ValidationError(`--format must be json or markdown, got "${format}"`, { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'export');
    const doc = await core.archive.export(scope.id);
    const counts = countScopeExport(doc);
    const out = ctx.values.out as string | undefined;
    const exportsDir = path.join(ctx.config.dataDir, 'exports');

    if (format === 'json') {
      const text = serializeScopeExport(doc);
      if (!out) {
        ctx.out.write(text);
        return 0;
      }
      const [file] = await recordExportFiles(exportsDir, scope.id, [{ file: out, kind: 'json' }]);
      await fs.writeFile(file!, text, 'utf8');
      writeResult(
        ctx,
        { scope: scope.key, format, file: out, bytes: Buffer.byteLength(text), counts },
        `exported ${scope.key} to ${out}: ${plural(counts.episodes, 'episode')}, ${plural(counts.memories, 'memory', 'memories')} (with history), ${plural(counts.auditEvents, 'audit event')}`,
      );
      return 0;
    }

    const dir = out ?? path.join(exportsDir, exportFolderName(scope));
    const files = renderMarkdownExport(doc, { defaultTimeZone: ctx.config.timeZone });
    await recordExportFiles(
      exportsDir,
      scope.id,
      [...files.keys()].map((relative) => ({ file: path.join(dir, relative), kind: 'markdown' as const })),
    );
    const written = await writeMarkdownExport(dir, files);
    writeResult(
      ctx,
      { scope: scope.key, format, dir, files: [...files.keys()], counts },
      `wrote ${plural(written.length, 'file')} to ${dir}: MEMORY.md and ${plural(written.length - 1, 'daily log')} in memory/`,
    );
    return 0;
  },
};
