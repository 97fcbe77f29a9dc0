/**
 * Where Nocturne writes a scope's exports under `DATA_DIR/exports`, in one place: the commands
 * that write them and forgetting, which must find them again to take the forgotten text out.
 */

/** The folder of a scope's Markdown export (`telegram:private:123` -> `telegram-private-123`). */
export function exportFolderName(scopeKey: string): string {
  return scopeKey.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'scope';
}

/** A file name from a scope key: `telegram:private:42` -> `nocturne-telegram-private-42`. */
export function exportStem(scopeKey: string): string {
  return `nocturne-${scopeKey.replace(/[^A-Za-z0-9_-]+/g, '-')}`;
}
