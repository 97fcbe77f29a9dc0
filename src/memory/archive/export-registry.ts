/**
 * The record of every export file Nocturne writes, wherever it writes it: forgetting must reach a
 * file the CLI wrote to an `--out` path the person chose (`exports/ana.json`, `~/notes/`) as
 * surely as one in the scope's own folder, and a file's name or place cannot say whose it is.
 *
 * Why a manifest file, `DATA_DIR/exports/written.jsonl`, rather than a table: the export files
 * live on the file system, not in the store, and the record belongs beside them. It stays right
 * when the store is moved (`migrate-store` to PostgreSQL), restored from a backup or opened
 * read-only, it needs no migration on either database, and it is written by processes that may
 * hold no write lock on the store (the CLI next to the running service). One JSON line per file:
 * `{"scopeId": ..., "file": <absolute path>, "kind": "json" | "markdown", "at": <ISO time>}`.
 * Lines are only ever appended, each with one `write` in append mode (short lines land whole even
 * when two processes append at once); a torn or foreign line is skipped when read.
 *
 * A file is recorded *before* it is written: a crash between the two leaves a record of a file that
 * is not there (skipped), never a file nobody recorded. The record says where a file was written,
 * not that it is still ours: forgetting checks the file at that path still looks like an export
 * Nocturne writes before it edits or deletes it (src/memory/forget/export-files.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';

/** The manifest's name inside `DATA_DIR/exports`. */
export const EXPORT_REGISTRY_FILE = 'written.jsonl';

/** The two shapes of export file: the JSON document, and Markdown rendered from it. */
export type ExportFileKind = 'json' | 'markdown';

/** One export file Nocturne wrote. */
export interface ExportRecord {
  readonly scopeId: string;
  /** Absolute, with the folder's links resolved as they were when it was written. */
  readonly file: string;
  readonly kind: ExportFileKind;
}

/** Where the manifest of `exportsDir` (`DATA_DIR/exports`) is. */
export function exportRegistryPath(exportsDir: string): string {
  return path.join(exportsDir, EXPORT_REGISTRY_FILE);
}

/** The absolute path a file will have, its folder's links resolved (the folder is created). */
async function resolvedTarget(file: string): Promise<string> {
  const dir = path.dirname(path.resolve(file));
  await fs.mkdir(dir, { recursive: true });
  return path.join(await fs.realpath(dir), path.basename(file));
}

/**
 * Records that `files` of scope `scopeId` are about to be written, and returns their resolved
 * paths (write to those). Call it before writing them.
 */
export async function recordExportFiles(
  exportsDir: string,
  scopeId: string,
  files: ReadonlyArray<{ file: string; kind: ExportFileKind }>,
  now = new Date(),
): Promise<string[]> {
  const resolved: string[] = [];
  const lines: string[] = [];
  for (const { file, kind } of files) {
    const target = await resolvedTarget(file);
    resolved.push(target);
    lines.push(JSON.stringify({ scopeId, file: target, kind, at: now.toISOString() }));
  }
  if (lines.length === 0) return resolved;
  await fs.mkdir(exportsDir, { recursive: true });
  // One line per write: an append of a short line is not interleaved with another process's.
  for (const line of lines) await fs.appendFile(exportRegistryPath(exportsDir), `${line}\n`, { encoding: 'utf8', flag: 'a' });
  return resolved;
}

function recordOf(line: string): ExportRecord | null {
  try {
    const value = JSON.parse(line) as Partial<ExportRecord>;
    if (typeof value.scopeId !== 'string' || typeof value.file !== 'string' || !path.isAbsolute(value.file)) return null;
    if (value.kind !== 'json' && value.kind !== 'markdown') return null;
    return { scopeId: value.scopeId, file: value.file, kind: value.kind };
  } catch {
    return null;
  }
}

/** The files recorded for a scope (each path once; the latest kind wins); none when there is no manifest. */
export async function recordedExportFiles(exportsDir: string, scopeId: string): Promise<ExportRecord[]> {
  let text: string;
  try {
    text = await fs.readFile(exportRegistryPath(exportsDir), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const byFile = new Map<string, ExportRecord>();
  for (const line of text.split('\n')) {
    const record = line.trim() === '' ? null : recordOf(line);
    if (record && record.scopeId === scopeId) byFile.set(record.file, record);
  }
  return [...byFile.values()];
}
