/**
 * Where Nocturne writes a scope's exports under `DATA_DIR/exports`, in one place: the commands
 * that write them and forgetting, which must find them again to take the forgotten text out.
 *
 * Every export file of a scope lives in the scope's own folder, `exports/<slug>-<tag>/`: the slug
 * is the key with everything but letters, digits, `_` and `-` replaced (so a person can tell the
 * folders apart, and it never holds a dot or a separator), the tag 16 hex digits of the SHA-256 of
 * the scope's id. The tag makes the name the scope's alone: two keys with one slug (`kim:lee`,
 * `kim-lee`) get two folders, and no key (`..`, `.`, `a/../b`) can name a folder outside
 * `exports/` or another scope's. Inside it, the Markdown export (`MEMORY.md`, `memory/<day>.md`)
 * and the chat `/export` pair (`nocturne-<slug>.json` / `.md`) are the only names Nocturne writes,
 * and so the only files forgetting may edit or delete ({@link isExportFileName}).
 */
import { createHash } from 'node:crypto';

/** Longest slug kept in a folder name (the tag keeps names unique; the slug is for reading). */
const SLUG_MAX_LENGTH = 48;
const TAG_HEX_DIGITS = 16;

function slugOf(scopeKey: string): string {
  const slug = scopeKey
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX_LENGTH)
    .replace(/-+$/, '');
  return slug || 'scope';
}

/** The folder of a scope's exports: `telegram:private:123` -> `telegram-private-123-<16 hex of its id>`. */
export function exportFolderName(scope: { readonly id: string; readonly key: string }): string {
  const tag = createHash('sha256').update(scope.id, 'utf8').digest('hex').slice(0, TAG_HEX_DIGITS);
  return `${slugOf(scope.key)}-${tag}`;
}

/** A file name from a scope key: `telegram:private:42` -> `nocturne-telegram-private-42`. */
export function exportStem(scopeKey: string): string {
  return `nocturne-${slugOf(scopeKey)}`;
}

const DAY_LOG = /^\d{4}-\d{2}-\d{2}\.md$/;
const CHAT_EXPORT = /^nocturne-[A-Za-z0-9_-]+\.(?:json|md)$/;

/**
 * Whether `relative` (a path inside a scope's export folder, `/`-separated) is a name Nocturne
 * writes there: `MEMORY.md`, `memory/YYYY-MM-DD.md`, or a chat export `nocturne-<slug>.json|md`.
 */
export function isExportFileName(relative: string): boolean {
  const parts = relative.split('/');
  if (parts.length === 1) return parts[0] === 'MEMORY.md' || CHAT_EXPORT.test(parts[0]!);
  return parts.length === 2 && parts[0] === 'memory' && DAY_LOG.test(parts[1]!);
}

/** The folder name earlier versions gave a scope's Markdown export (from the key alone): found and moved once. */
export function legacyExportFolderName(scopeKey: string): string {
  return scopeKey.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'scope';
}

/** The file stem earlier versions gave the chat `/export` pair, written straight into `exports/`. */
export function legacyExportStem(scopeKey: string): string {
  return `nocturne-${scopeKey.replace(/[^A-Za-z0-9_-]+/g, '-')}`;
}
