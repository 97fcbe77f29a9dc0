/**
 * Export files Nocturne wrote itself under `DATA_DIR/exports` keep what they were written with;
 * forgetting takes the forgotten text out of those of the scope. They live in the scope's own
 * folder (src/export/export-paths.ts: named from the scope's id, never from what a person typed):
 * the Markdown export of `npm run cli -- export` and the pair of the chat `/export`.
 *
 * - a Markdown file loses every line that holds the text (one line is one memory, or one
 *   message of a daily log);
 * - any other file (the JSON export, one value per line) with a line holding the text is
 *   deleted: a partly edited JSON export would no longer import, and the owner can export again.
 *
 * Only a file Nocturne could have written is ever a candidate: a regular file (not a link) with
 * one of the names it writes, inside the scope's folder once every link is resolved, and never one
 * of the store's own files (the database and its logs, handed in as `protectedFiles`). Files are
 * replaced by a rename, so a crash leaves the old or the new file, never a torn one. Files
 * elsewhere (an `--out` path the person chose, documents Telegram already delivered) are the
 * person's, beyond Nocturne's reach (docs/sleep.md, "Forgetting").
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { exportFolderName, isExportFileName } from '../../export/export-paths';

export interface ExportScrub {
  readonly rewritten: string[];
  readonly deleted: string[];
}

/** Where a scope's export files are, and what may never be touched. */
export interface ExportLocation {
  /** `DATA_DIR/exports`. */
  readonly exportsDir: string;
  readonly scope: { readonly id: string; readonly key: string };
  /** The store's files (database, write-ahead log, vectors): never edited or deleted here, wherever they are. */
  readonly protectedFiles?: readonly string[];
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** `dir` resolved, when it is a real folder (not a link to one); null when it is missing or not a folder. */
async function realFolder(dir: string): Promise<string | null> {
  try {
    if (!(await fs.lstat(dir)).isDirectory()) return null;
    return await fs.realpath(dir);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/** Every path by which a protected file may be reached: as given and resolved. */
async function protectedSet(files: readonly string[]): Promise<Set<string>> {
  const set = new Set<string>();
  for (const file of files) {
    set.add(path.resolve(file));
    const real = await fs.realpath(file).catch(() => null);
    if (real) set.add(real);
  }
  return set;
}

/** The export files of one scope (see the module comment for what qualifies), resolved. */
export async function scopeExportFiles(location: ExportLocation): Promise<string[]> {
  // DATA_DIR itself may be reached through a link (a mounted volume); below it, nothing may be.
  const exportsRoot = await fs.realpath(location.exportsDir).catch((error: unknown) => (isMissing(error) ? null : Promise.reject(error)));
  if (!exportsRoot) return [];
  const folder = await realFolder(path.join(exportsRoot, exportFolderName(location.scope)));
  if (!folder || path.dirname(folder) !== exportsRoot) return [];
  const never = await protectedSet(location.protectedFiles ?? []);
  const relatives = (await fs.readdir(folder)).filter((name) => isExportFileName(name));
  const days = await realFolder(path.join(folder, 'memory'));
  if (days && path.dirname(days) === folder) {
    relatives.push(...(await fs.readdir(days)).map((name) => `memory/${name}`).filter((relative) => isExportFileName(relative)));
  }
  const files: string[] = [];
  for (const relative of relatives) {
    const file = path.join(folder, ...relative.split('/'));
    const stat = await fs.lstat(file).catch((error: unknown) => (isMissing(error) ? null : Promise.reject(error)));
    if (!stat?.isFile()) continue;
    const real = await fs.realpath(file);
    if (real !== file || !real.startsWith(folder + path.sep) || never.has(real)) continue;
    files.push(real);
  }
  return files;
}

/** Takes what `holds` recognizes out of the scope's export files (see the module comment). */
export async function scrubExportFiles(location: ExportLocation & { readonly holds: (text: string) => boolean }): Promise<ExportScrub> {
  const { holds } = location;
  const rewritten: string[] = [];
  const deleted: string[] = [];
  for (const file of await scopeExportFiles(location)) {
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

/** Deletes every export file of the scope (a purge: what they hold was learned, and all of it goes). */
export async function removeExportFiles(location: ExportLocation): Promise<string[]> {
  const files = await scopeExportFiles(location);
  for (const file of files) await fs.rm(file, { force: true });
  return files;
}
