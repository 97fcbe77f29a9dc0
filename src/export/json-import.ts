/**
 * Imports a scope export document (`scope-document.ts`): validated first (zod, then the references between its
 * rows), written in one transaction, so a bad document or a clash writes nothing.
 *
 * Two modes:
 * - `exact` (default) keeps every id and timestamp, so exporting the imported scope gives the same
 *   bytes. The scope must be new, or exist under that key with no data (created by a first
 *   message, say); ids already present in the database are refused.
 * - `copy` gives the scope and every row new ids (references and ids inside JSON documents follow),
 *   keeping timestamps: for a second copy of a scope in the same database, under a new key.
 *
 * Validation is in `import-validation.ts`, the writing of rows in `insert-scope.ts` (shared with
 * the store migration), the new ids of `copy` in `scope-copy.ts`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { delegateOf, EXPORTED_MODELS } from '../memory/scopes/scope-data-walk';
import { normalizeScopeKey } from '../memory/scopes/scope-key';
import type { EpisodeLimits } from '../memory/episodes/episode-limits';
import { type AppError, NotFoundError, ValidationError } from '../shared/errors';
import type { PrismaClient } from '../storage/prisma';
import { parseScopeExport } from './import-validation';
import type { ImportFile } from './import-file';
import { startImportThread } from './import-thread';
import { IMPORT_TRANSACTION, insertBatch, insertScopeRow, scopeBatches, type RowBatch } from './insert-scope';
import { withNewIds } from './scope-copy';
import { countScopeExport, type ScopeCounts, type ScopeExport } from './scope-document';

/** `exact` reproduces the exported scope (ids kept); `copy` makes a second copy with new ids. */
export type ImportMode = 'exact' | 'copy';

/** How {@link importScope} writes a document. */
export interface ImportOptions {
  /** `exact` keeps ids (default); `copy` makes new ones. */
  readonly mode?: ImportMode;
  /** Import under this key instead of the document's (required by `copy` when the key is taken). */
  readonly scopeKey?: string;
  /**
   * With `scopeKey` unset: the document must be the export of the scope with this id (the admin
   * API creates a scope only under its own id); a NotFoundError otherwise, before validation.
   */
  readonly requireScopeId?: string;
}

/** What an import wrote, for the CLI and the API to report. */
export interface ImportResult {
  readonly scopeId: string;
  readonly scopeKey: string;
  readonly mode: ImportMode;
  readonly counts: ScopeCounts;
}

/** Rows of a scope in the tables an import writes to, every exported model of the data map (an import needs them all empty). */
async function rowsInScope(prisma: PrismaClient, scopeId: string): Promise<number> {
  const counts = await Promise.all(EXPORTED_MODELS.map((m) => delegateOf(prisma, m).count({ where: { scopeId } })));
  return counts.reduce((a, b) => a + b, 0);
}

/** The error for an import that would overwrite or duplicate rows. */
function conflict(message: string, hint: string, cause?: unknown): AppError {
  return new ValidationError(message, { code: 'import.conflict', hint, cause });
}

/** A document ready to write: its scope row, its counts and its rows in batches (foreign-key order). */
interface Prepared {
  readonly scope: ScopeExport['scope'];
  readonly counts: ScopeCounts;
  /** The next batch, or undefined at the end. */
  nextBatch(): Promise<RowBatch | undefined>;
}

/** Rows per batch of the streamed import: small enough that one write stays well under 100 ms. */
const STREAM_BATCH = 25;

/**
 * Validates `value` and imports it as one scope, in one transaction; its episodes must keep the
 * `limits` every door applies. Throws `import.invalid_document` (bad document, or an episode too
 * large) or `import.conflict` (the scope has data, or ids are taken); in both cases nothing was
 * written.
 */
export async function importScope(prisma: PrismaClient, value: unknown, limits: EpisodeLimits, options: ImportOptions = {}): Promise<ImportResult> {
  const mode = options.mode ?? 'exact';
  const parsed = parseScopeExport(value, limits);
  const doc = mode === 'copy' ? withNewIds(parsed) : parsed;
  const batches = scopeBatches(doc);
  return write(prisma, { scope: doc.scope, counts: countScopeExport(doc), nextBatch: async () => batches.next().value ?? undefined }, options);
}

/**
 * The same import from an export file (the admin API's spooled request body, the CLI's file),
 * streamed: a worker thread reads it one element at a time, checks it whole, then reads it again
 * and hands the rows back a batch at a time; between batches the event loop serves other
 * requests. Memory is bounded by the largest element a valid message can take and the ids, not
 * by the document (a larger element is refused without being held). Same
 * errors, same single transaction, same result as {@link importScope}; bad JSON is
 * `import.invalid_json` (its `details.syntax` names the line and column).
 */
export async function importScopeFile(prisma: PrismaClient, file: ImportFile, limits: EpisodeLimits, options: ImportOptions = {}): Promise<ImportResult> {
  const mode = options.mode ?? 'exact';
  const thread = startImportThread(file, mode, STREAM_BATCH, limits);
  try {
    const peeked = await thread.receive();
    if (peeked.type !== 'peeked') throw new Error(`import thread: unexpected ${peeked.type}`);
    if (options.scopeKey === undefined && options.requireScopeId !== undefined && peeked.scopeId !== options.requireScopeId) {
      throw new NotFoundError(`no scope ${options.requireScopeId} (an export creates a scope only under its own id)`);
    }
    thread.send({ type: 'go' });
    const header = await thread.receive();
    if (header.type !== 'header') throw new Error(`import thread: unexpected ${header.type}`);
    return await write(
      prisma,
      {
        scope: header.scope,
        counts: header.counts,
        async nextBatch() {
          thread.send({ type: 'next' });
          const message = await thread.receive();
          if (message.type === 'rows') return message.batch;
          if (message.type === 'done') return undefined;
          throw new Error(`import thread: unexpected ${message.type}`);
        },
      },
      options,
    );
  } finally {
    await thread.close();
  }
}

/** The checks against the database, then the one transaction that writes every batch. */
async function write(prisma: PrismaClient, prepared: Prepared, options: ImportOptions): Promise<ImportResult> {
  const mode = options.mode ?? 'exact';
  // A new scope's key passes the same rule as at every other door (scope-key.ts), for the
  // export's key and for `--as`; an existing scope keeps the key it has.
  const given = options.scopeKey ?? prepared.scope.key;
  const existing =
    (await prisma.scope.findUnique({ where: { key: given } })) ??
    (await prisma.scope.findUnique({ where: { key: normalizeScopeKey(given, 'import.invalid_key') } }));
  const key = existing?.key ?? normalizeScopeKey(given, 'import.invalid_key');
  if (existing && (await rowsInScope(prisma, existing.id)) > 0) {
    throw conflict(
      `The scope "${key}" already has data; an import only fills an empty scope.`,
      'Import under a new key: `npm run cli -- import-scope FILE --as NEW_KEY`.',
    );
  }
  if (!existing) {
    const sameId = await prisma.scope.findUnique({ where: { id: prepared.scope.id } });
    if (sameId) {
      throw conflict(
        `This database already holds the exported scope (id ${prepared.scope.id}) under the key "${sameId.key}".`,
        'Import a copy with new ids under another key: `npm run cli -- import-scope FILE --as NEW_KEY`.',
      );
    }
  }
  const scopeId = existing?.id ?? prepared.scope.id;
  try {
    await prisma.$transaction(async (tx) => {
      await insertScopeRow(tx, prepared.scope, { scopeId, scopeKey: key, scopeExists: existing !== null });
      for (let batch = await prepared.nextBatch(); batch; batch = await prepared.nextBatch()) {
        await insertBatch(tx, batch, scopeId);
        // The driver's promises resolve at once (better-sqlite3 is synchronous): without a real
        // turn of the event loop here, the whole import would run as one uninterrupted task.
        await nextTurn();
      }
    }, IMPORT_TRANSACTION);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'P2002') {
      throw conflict(
        'Rows of this export (the same ids) are already in this database; nothing was imported.',
        'Import a copy with new ids under another key: `npm run cli -- import-scope FILE --as NEW_KEY`.',
        error,
      );
    }
    throw error;
  }
  return { scopeId, scopeKey: key, mode, counts: prepared.counts };
}
