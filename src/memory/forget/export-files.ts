/**
 * Export files Nocturne wrote itself keep what they were written with; forgetting takes the
 * forgotten text out of those of the scope. Two ways find them: the scope's own folder under
 * `DATA_DIR/exports` (src/memory/archive/export-paths.ts: named from the scope's id, never from what a
 * person typed), where earlier versions wrote them, and the manifest of every file written since
 * (src/memory/archive/export-registry.ts), wherever it is: an `--out` path of `npm run cli -- export`, the
 * chat `/export` pair.
 *
 * - a Markdown file loses every line that holds the text (one line is one memory, one entity, or
 *   one message of a daily log, with the indented lines that continue it);
 * - a JSON export holding the text in any of its strings (read decoded: a word after a line
 *   break of a long message is `\nword` in the file) is deleted: a partly edited JSON export
 *   would no longer import, and the owner can export again.
 *
 * What "holds the text" means is {@link ForgottenText}: the words or quotes of the forget, and
 * what the forget changed in the scope (export-gone.ts). Files are read and rewritten line by
 * line, so their size does not matter.
 *
 * Only a file Nocturne could have written is ever a candidate: a regular file (not a link), never
 * one of the store's own files (the database and its logs, handed in as `protectedFiles`); in the
 * scope's folder, one of the names it writes there, inside the folder once every link is resolved;
 * from the manifest, at its recorded path with no link on the way and still starting the way the
 * export it recorded starts (a file the person put there since is theirs). Files are replaced by a
 * rename, so a crash leaves the old or the new file, never a torn one. Files Nocturne did not
 * write to disk (JSON printed to stdout, documents Telegram already delivered) are the person's,
 * beyond Nocturne's reach (docs/sleep.md, "Forgetting").
 */
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { exportFolderName, isExportFileName } from '../archive/export-paths';
import { recordedExportFiles, type ExportFileKind } from '../archive/export-registry';

export interface ExportScrub {
  readonly rewritten: string[];
  readonly deleted: string[];
}

/** What a line of an export must not hold any more after a forget. */
export interface ForgottenText {
  /** The words being forgotten, or the quotes of the removed memories. */
  readonly holds: (text: string) => boolean;
  /** Markdown lines the scope's export gave before the forget and no longer gives (export-gone.ts). */
  readonly goneLines?: ReadonlySet<string>;
  /** Texts (messages, memories, summaries, names) the export held before the forget and no longer holds. */
  readonly goneStrings?: ReadonlySet<string>;
}

/** An export file found for a scope. */
export interface ExportFile {
  readonly file: string;
  readonly kind: ExportFileKind;
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

/** The export files in the scope's own folder (see the module comment for what qualifies), resolved. */
async function folderExportFiles(location: ExportLocation, never: ReadonlySet<string>): Promise<string[]> {
  // DATA_DIR itself may be reached through a link (a mounted volume); below it, nothing may be.
  const exportsRoot = await fs.realpath(location.exportsDir).catch((error: unknown) => (isMissing(error) ? null : Promise.reject(error)));
  if (!exportsRoot) return [];
  const folder = await realFolder(path.join(exportsRoot, exportFolderName(location.scope)));
  if (!folder || path.dirname(folder) !== exportsRoot) return [];
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

/** Bytes read from the start of a recorded file to tell whether it is still the export written there. */
const HEAD_BYTES = 512;
const MARKDOWN_HEAD = /^(?:# MEMORY\.md: |# \d{4}-\d{2}-\d{2}\n|<!-- MEMORY\.md -->\n)/;
const JSON_HEAD = /^\{\s*"format": "nocturne\.scope-export"/;

/** Whether `file` starts as an export of `kind` Nocturne writes. */
async function looksLikeExport(file: string, kind: ExportFileKind): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    const head = buffer.subarray(0, bytesRead).toString('utf8');
    return kind === 'json' ? JSON_HEAD.test(head) : MARKDOWN_HEAD.test(head);
  } finally {
    await handle.close();
  }
}

/** The recorded files of the scope that are still there as written (see the module comment). */
async function recordedFiles(location: ExportLocation, never: ReadonlySet<string>): Promise<ExportFile[]> {
  const out: ExportFile[] = [];
  for (const record of await recordedExportFiles(location.exportsDir, location.scope.id)) {
    const stat = await fs.lstat(record.file).catch((error: unknown) => (isMissing(error) ? null : Promise.reject(error)));
    if (!stat?.isFile()) continue;
    const real = await fs.realpath(record.file);
    if (real !== record.file || never.has(real)) continue;
    if (await looksLikeExport(real, record.kind)) out.push({ file: real, kind: record.kind });
  }
  return out;
}

/** Every export file of one scope: its folder's and the recorded ones (see the module comment), each once. */
export async function scopeExportFiles(location: ExportLocation): Promise<ExportFile[]> {
  const never = await protectedSet(location.protectedFiles ?? []);
  const byFile = new Map<string, ExportFile>();
  for (const file of await folderExportFiles(location, never)) byFile.set(file, { file, kind: file.endsWith('.md') ? 'markdown' : 'json' });
  for (const recorded of await recordedFiles(location, never)) byFile.set(recorded.file, recorded);
  return [...byFile.values()];
}

function lines(file: string): readline.Interface {
  return readline.createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
}

const STRING_LITERAL = /"(?:[^"\\]|\\.)*"/g;

/** The strings of one line of a JSON export, decoded (keys and values). */
function jsonStrings(line: string): string[] {
  const out: string[] = [];
  for (const literal of line.match(STRING_LITERAL) ?? []) {
    try {
      out.push(JSON.parse(literal) as string);
    } catch {
      out.push(literal);
    }
  }
  return out;
}

function holdsString(text: string, forgotten: ForgottenText): boolean {
  return forgotten.holds(text) || (forgotten.goneStrings?.has(text) ?? false);
}

/** Whether a JSON export holds forgotten text in any of its strings (read line by line). */
async function jsonHolds(file: string, forgotten: ForgottenText): Promise<boolean> {
  const reader = lines(file);
  try {
    for await (const line of reader) {
      if (forgotten.holds(line) || jsonStrings(line).some((text) => holdsString(text, forgotten))) return true;
    }
    return false;
  } finally {
    reader.close();
  }
}

/** A Markdown line that continues the item above it (a later line of a message, or a blank one inside it). */
function continues(line: string): boolean {
  return line.startsWith('  ');
}

/**
 * Streams `file` without the lines holding forgotten text, and without the continuation lines of an
 * item dropped (a message's later lines go with its first). Returns how many lines were dropped;
 * `write` (when given) receives the kept text.
 */
async function markdownWithout(file: string, forgotten: ForgottenText, write?: (text: string) => void): Promise<number> {
  let dropped = 0;
  let dropping = false;
  let blanks: string[] = [];
  const emit = (line: string) => write?.(`${line}\n`);
  for await (const line of lines(file)) {
    if (line === '') {
      blanks.push(line);
      continue;
    }
    if (dropping && continues(line)) {
      dropped += 1 + blanks.length;
      blanks = [];
      continue;
    }
    for (const blank of blanks) emit(blank);
    blanks = [];
    dropping = forgotten.holds(line) || (forgotten.goneLines?.has(line) ?? false) || (forgotten.goneStrings?.has(line.trim()) ?? false);
    if (dropping) dropped++;
    else emit(line);
  }
  for (const blank of blanks) emit(blank);
  return dropped;
}

/** Rewrites a Markdown export without the forgotten lines; false when it holds none. */
async function scrubMarkdown(file: string, forgotten: ForgottenText, dryRun: boolean): Promise<boolean> {
  if (dryRun) return (await markdownWithout(file, forgotten)) > 0;
  const temp = `${file}.forget-${process.pid}.tmp`;
  const handle = await fs.open(temp, 'w');
  let dropped = 0;
  try {
    const out = handle.createWriteStream({ encoding: 'utf8' });
    const finished = new Promise<void>((resolve, reject) => {
      out.on('finish', resolve);
      out.on('error', reject);
    });
    dropped = await markdownWithout(file, forgotten, (text) => out.write(text));
    out.end();
    await finished;
  } finally {
    await handle.close().catch(() => undefined);
  }
  if (dropped === 0) {
    await fs.rm(temp, { force: true });
    return false;
  }
  await fs.rename(temp, file);
  return true;
}

/**
 * Takes forgotten text out of the scope's export files (see the module comment). With `dryRun`,
 * only says which files would be rewritten or deleted.
 */
export async function scrubExportFiles(
  location: ExportLocation & ForgottenText & { readonly dryRun?: boolean; readonly files?: readonly ExportFile[] },
): Promise<ExportScrub> {
  const rewritten: string[] = [];
  const deleted: string[] = [];
  const dryRun = location.dryRun === true;
  for (const { file, kind } of location.files ?? (await scopeExportFiles(location))) {
    if (kind === 'markdown') {
      if (await scrubMarkdown(file, location, dryRun)) rewritten.push(file);
    } else if (await jsonHolds(file, location)) {
      if (!dryRun) await fs.rm(file, { force: true });
      deleted.push(file);
    }
  }
  return { rewritten, deleted };
}

/** Deletes every export file of the scope (a purge: what they hold was learned, and all of it goes). */
export async function removeExportFiles(location: ExportLocation): Promise<string[]> {
  const files = (await scopeExportFiles(location)).map((f) => f.file);
  for (const file of files) await fs.rm(file, { force: true });
  return files;
}
