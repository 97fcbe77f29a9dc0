/**
 * Export files Nocturne wrote itself under `DATA_DIR/exports` keep what they were written with;
 * forgetting takes the forgotten text out of those of the scope (src/export/export-paths.ts names
 * them: the Markdown folder `exports/<scope folder>/` of `npm run cli -- export`, and the
 * `exports/<stem>.json` / `.md` pair of the terminal's `/export`):
 *
 * - a Markdown file loses every line that holds the text (one line is one memory, or one
 *   message of a daily log);
 * - any other file (the JSON export, one value per line) with a line holding the text is
 *   deleted: a partly edited JSON export would no longer import, and the owner can export again.
 *
 * Files are replaced by a rename, so a crash leaves the old or the new file, never a torn one.
 * Files elsewhere (an `--out` path the person chose, documents Telegram already delivered) are the
 * person's, beyond Nocturne's reach (docs/sleep.md, "Forgetting").
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { exportFolderName, exportStem } from '../../export/export-paths';

export interface ExportScrub {
  readonly rewritten: string[];
  readonly deleted: string[];
}

async function filesUnder(dir: string): Promise<string[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const out: string[] = [];
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(full)));
    else if (e.isFile()) out.push(full);
  }
  return out;
}

/** The export files of one scope under `exportsDir`. */
export async function scopeExportFiles(exportsDir: string, scopeKey: string): Promise<string[]> {
  const stem = exportStem(scopeKey);
  const top = (await fs.readdir(exportsDir, { withFileTypes: true }).catch(() => [])).filter((e) => e.isFile() && (e.name === `${stem}.json` || e.name === `${stem}.md`));
  return [...top.map((e) => path.join(exportsDir, e.name)), ...(await filesUnder(path.join(exportsDir, exportFolderName(scopeKey))))];
}

/** Takes what `holds` recognizes out of the scope's export files (see the module comment). */
export async function scrubExportFiles(params: { exportsDir: string; scopeKey: string; holds: (text: string) => boolean }): Promise<ExportScrub> {
  const { holds } = params;
  const rewritten: string[] = [];
  const deleted: string[] = [];
  for (const file of await scopeExportFiles(params.exportsDir, params.scopeKey)) {
    const lines = (await fs.readFile(file, 'utf8')).split('\n');
    const kept = lines.filter((line) => !holds(line));
    if (kept.length === lines.length) continue;
    if (file.endsWith('.md')) {
      const temp = `${file}.forget-${process.pid}.tmp`;
      await fs.writeFile(temp, kept.join('\n'), 'utf8');
      await fs.rename(temp, file);
      rewritten.push(file);
    } else {
      await fs.rm(file, { force: true });
      deleted.push(file);
    }
  }
  return { rewritten, deleted };
}
