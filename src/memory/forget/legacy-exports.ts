/**
 * Export files written by earlier versions, which named a scope's folder (and the chat `/export`
 * pair, written straight into `exports/`) from its key alone, are moved once into the scope's own
 * folder (export-paths.ts), so forgetting finds them where it looks.
 *
 * A name is moved only when exactly one scope could have written it. Keys that differ only in the
 * characters the old naming replaced (`kim:lee`, `kim-lee`) shared one folder; whose lines are
 * whose cannot be told, so such a folder is left where it is and reported (the operator decides),
 * never handed to one of them. A name no scope claims is left alone, and nothing is ever deleted
 * here. The old folder names `.` and `..` named `exports/` itself and `DATA_DIR`, which readdir
 * never lists, so nothing outside `exports/` can be moved.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../shared/logger';
import { exportFolderName, exportStem, legacyExportFolderName, legacyExportStem } from '../archive/export-paths';

/** What one adoption did. */
export interface LegacyExportAdoption {
  /** `old name -> new folder` for every folder or file moved. */
  readonly moved: string[];
  /** Old names several scopes could have written, left in place. */
  readonly shared: string[];
}

type ScopeName = { readonly id: string; readonly key: string };

/** A folder name the current naming gives (`<slug>-<16 hex>`): never an old one to adopt. */
const CURRENT_FOLDER = /-[0-9a-f]{16}$/;
const OLD_CHAT_EXPORT = /^(nocturne-.+)\.(json|md)$/;

async function exists(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => true,
    () => false,
  );
}

function groupBy(scopes: readonly ScopeName[], name: (key: string) => string): Map<string, ScopeName[]> {
  const groups = new Map<string, ScopeName[]>();
  for (const scope of scopes) {
    const n = name(scope.key);
    groups.set(n, [...(groups.get(n) ?? []), scope]);
  }
  return groups;
}

/**
 * Moves the old-style export folders and files under `exportsDir` into their scope's folder.
 * `listScopes` is asked only when something old-style is there.
 */
export async function adoptLegacyExports(exportsDir: string, listScopes: () => Promise<ScopeName[]>): Promise<LegacyExportAdoption> {
  const entries = await fs.readdir(exportsDir, { withFileTypes: true }).catch(() => []);
  const folders = entries.filter((e) => e.isDirectory() && !CURRENT_FOLDER.test(e.name)).map((e) => e.name);
  const files = entries.filter((e) => e.isFile() && OLD_CHAT_EXPORT.test(e.name)).map((e) => e.name);
  const moved: string[] = [];
  const shared: string[] = [];
  if (folders.length === 0 && files.length === 0) return { moved, shared };

  const scopes = await listScopes();
  const byFolder = groupBy(scopes, legacyExportFolderName);
  const byStem = groupBy(scopes, legacyExportStem);
  for (const name of folders) {
    const owners = byFolder.get(name) ?? [];
    if (owners.length > 1) shared.push(name);
    if (owners.length !== 1) continue;
    const target = path.join(exportsDir, exportFolderName(owners[0]!));
    if (await exists(target)) continue;
    await fs.rename(path.join(exportsDir, name), target);
    moved.push(`${name} -> ${path.basename(target)}`);
  }
  for (const name of files) {
    const [, stem, extension] = OLD_CHAT_EXPORT.exec(name)!;
    const owners = byStem.get(stem!) ?? [];
    if (owners.length > 1) shared.push(name);
    if (owners.length !== 1) continue;
    const folder = path.join(exportsDir, exportFolderName(owners[0]!));
    const target = path.join(folder, `${exportStem(owners[0]!.key)}.${extension}`);
    if (await exists(target)) continue;
    await fs.mkdir(folder, { recursive: true });
    await fs.rename(path.join(exportsDir, name), target);
    moved.push(`${name} -> ${path.basename(folder)}/${path.basename(target)}`);
  }
  return { moved, shared };
}

/**
 * {@link adoptLegacyExports} run at most once per process (again after a failure, which is logged
 * and never stops a forget): what forgetting calls before its first scrub.
 */
export function onceAdoptingLegacyExports(exportsDir: string | undefined, listScopes: () => Promise<ScopeName[]>, log: Logger): () => Promise<void> {
  let adopted: Promise<void> | undefined;
  return () => {
    if (!exportsDir) return Promise.resolve();
    adopted ??= adoptLegacyExports(exportsDir, listScopes).then(
      ({ moved, shared }) => {
        if (moved.length > 0) log.info('export files of an earlier version moved into their scope\u2019s folder', { count: moved.length });
        if (shared.length > 0)
          log.warn('old export files several scopes could have written are left in exports/ (forgetting cannot tell whose they are)', { names: shared.length });
      },
      (error: unknown) => {
        adopted = undefined;
        log.warn('could not move the export files of an earlier version', { error });
      },
    );
    return adopted;
  };
}
