/**
 * Store migration: copies everything from one configured store (typically the embedded SQLite +
 * sqlite-vec) to another (PostgreSQL, with sqlite-vec or Qdrant), scope by scope, and verifies
 * the copy before calling it a success.
 *
 * Per scope, in one target transaction: the scope's rows as {@link readScope} reads them (ids,
 * timestamps and history kept) plus its LlmCall rows (the cost history and daily budgets belong to
 * the deployment, unlike an export) and the identity links that point at it (the chats joined to
 * it stay joined: a move is the same installation). Safe to rerun: a scope whose target copy already equals the
 * source is skipped; one that differs but holds nothing the source lacks (an interrupted or
 * earlier run, the source got new messages since) is replaced by the source's rows; one that holds
 * rows the source lacks (the target was written to) is left alone and reported as a conflict.
 *
 * Vectors: through {@link VectorIndex.get}, vectors are read from the source index and written to
 * the target index when both are of the configured embedder, and the target rows are marked as
 * embedded. When the target index is the source index (the same file or Qdrant server), the
 * vectors are already in place (keys are scope id + row id, which are kept) and only the marks are
 * copied. Otherwise (another embedder, no source index) the rows stay unmarked and the embedding
 * worker of the service on the new store re-embeds them.
 *
 * Verification: for every scope, the row count of every table (and of the full-text index) in
 * source and target, and the whole scope read back from the target compared with the source.
 */
import type { Config } from '../config/load-config';
import type { Logger } from '../shared/logger';
import { openDatabase, type Database } from '../storage/database';
import type { IdentityLink, LlmCall, Prisma, PrismaClient } from '../storage/prisma';
import type { DatabaseProvider } from '../storage/prisma';
import { createFullTextIndex } from '../storage/full-text';
import type { MigratedEntry } from '../memory/scopes/scope-data-map';
import { delegateOf, MIGRATED_MODELS, SECTION_MODELS } from '../memory/scopes/scope-data-walk';
import { createVectorIndex } from '../vectors/indexes/create-vector-index';
import type { VectorIndex } from '../memory/vectors/vector-index';
import { readScope } from './json-export';
import { IMPORT_TRANSACTION, insertScope } from './insert-scope';
import { carryVectors, decideVectorPlan, type Store, type VectorMigrationParams, type VectorPlan } from './migrate-vectors';
import { byId, compareStrings, serializeScopeExport, type ScopeExport } from './scope-document';

export type { Store, VectorPlan } from './migrate-vectors';

/** What {@link migrateStore} copies from and to, and how it treats vectors. */
export interface MigrateStoreParams extends VectorMigrationParams {
  /** Called after each scope (progress for the CLI). */
  readonly onScope?: (scope: ScopeMigration, done: number, total: number) => void;
}

/** Rows of one table in source and target (equal after a verified copy). */
export interface TableCount {
  readonly source: number;
  readonly target: number;
}

/** One of {@link MIGRATED_TABLES}. */
export type MigratedTable = MigratedEntry['table'] | 'searchIndex';
/**
 * The tables verified per scope: every model the data map (scope-data-map.ts) says a migration
 * copies, then `searchIndex` (full-text documents of episodes and memories).
 */
export const MIGRATED_TABLES: readonly MigratedTable[] = [...MIGRATED_MODELS.map((m) => m.table), 'searchIndex'];

/** What happened to one scope, and whether its copy verified. */
export interface ScopeMigration {
  readonly id: string;
  readonly key: string;
  /** copied (new in the target), updated (replaced), unchanged (already equal), conflict (left alone). */
  readonly status: 'copied' | 'updated' | 'unchanged' | 'conflict';
  readonly problem?: string;
  readonly counts: Readonly<Record<MigratedTable, TableCount>>;
  /** Rows whose vector was carried over (or, with a shared index, re-marked) in this run. */
  readonly vectorsReused: number;
  /** Target rows left for the embedding worker. */
  readonly pendingEmbeddings: number;
  /** Every count equal and the target's copy equal to the source's. */
  readonly verified: boolean;
}

/** The result of a run; `ok` only when every scope verified. */
export interface MigrationReport {
  readonly vectors: { readonly plan: VectorPlan; readonly reason: string };
  readonly scopes: readonly ScopeMigration[];
  /** LlmCall rows that belong to no scope. */
  readonly unscopedLlmCalls: TableCount & { readonly copied: number };
  /** Keys of scopes only the target has (left alone). */
  readonly targetOnlyScopes: readonly string[];
  readonly ok: boolean;
}

type Tx = Prisma.TransactionClient;
const BATCH = 500;

/** LlmCall rows as plain comparable values, sorted by id. */
function callRecords(calls: readonly LlmCall[]): Array<Record<string, unknown>> {
  return byId(calls).map((c) => ({ ...c, createdAt: c.createdAt.toISOString() }));
}

/** Identity links as plain comparable values, sorted by identity. */
function linkRecords(links: readonly IdentityLink[]): string {
  const records = links.map((l) => ({ ...l, createdAt: l.createdAt.toISOString(), updatedAt: l.updatedAt.toISOString() }));
  return JSON.stringify(records.sort((a, b) => compareStrings(a.identityKey, b.identityKey)));
}

/** The identity links that send their identity's messages to the scope. */
function linksOf(prisma: PrismaClient | Tx, scopeId: string): Promise<IdentityLink[]> {
  return prisma.identityLink.findMany({ where: { scopeId } });
}

/**
 * Links of the target, for the source's identities, that point at another scope: the identity
 * was joined elsewhere on the target since, and its link is not the migration's to overwrite.
 */
async function linksElsewhere(target: PrismaClient, scopeId: string, links: readonly IdentityLink[]): Promise<string[]> {
  if (links.length === 0) return [];
  const found = await target.identityLink.findMany({ where: { identityKey: { in: links.map((l) => l.identityKey) }, scopeId: { not: scopeId } } });
  return found.map((l) => l.identityKey).sort(compareStrings);
}

async function insertCalls(tx: Tx, calls: readonly LlmCall[]): Promise<void> {
  for (let start = 0; start < calls.length; start += BATCH) await tx.llmCall.createMany({ data: calls.slice(start, start + BATCH) });
}

/** Rows of one scope in every migrated table of the data map, and its full-text documents. */
async function tableCounts(prisma: PrismaClient, provider: DatabaseProvider, scopeId: string): Promise<Record<MigratedTable, number>> {
  const fullText = createFullTextIndex(prisma, provider);
  const [rows, episodeDocs, memoryDocs] = await Promise.all([
    Promise.all(MIGRATED_MODELS.map(async (m) => [m.table, await delegateOf(prisma, m).count({ where: { scopeId } })] as const)),
    fullText.countDocuments(scopeId, 'episode'),
    fullText.countDocuments(scopeId, 'memory'),
  ]);
  return { ...(Object.fromEntries(rows) as Record<MigratedEntry['table'], number>), searchIndex: episodeDocs + memoryDocs };
}

/** Ids of the target's copy that the source does not have (rows someone wrote to the target). */
function targetOnlyRows(
  source: ScopeExport,
  target: ScopeExport,
  sourceCalls: readonly LlmCall[],
  targetCalls: readonly LlmCall[],
  sourceLinks: readonly IdentityLink[],
  targetLinks: readonly IdentityLink[],
): string[] {
  // Every section of rows with ids in the data map (nested rows go with their parents).
  const tables = SECTION_MODELS.map(({ exportPlace: { section } }) => [section, (d: ScopeExport) => d[section].map((r) => r.id)] as const);
  const extra: string[] = [];
  for (const [name, ids] of tables) {
    const known = new Set(ids(source));
    const n = ids(target).filter((id) => !known.has(id)).length;
    if (n > 0) extra.push(`${n} ${name}`);
  }
  const knownCalls = new Set(sourceCalls.map((c) => c.id));
  const calls = targetCalls.filter((c) => !knownCalls.has(c.id)).length;
  if (calls > 0) extra.push(`${calls} llmCalls`);
  const knownLinks = new Set(sourceLinks.map((l) => l.identityKey));
  const links = targetLinks.filter((l) => !knownLinks.has(l.identityKey)).length;
  if (links > 0) extra.push(`${links} identityLinks`);
  return extra;
}

async function migrateScope(params: MigrateStoreParams, plan: VectorPlan, scope: { id: string; key: string }): Promise<ScopeMigration> {
  const { source, target } = params;
  const sourceDoc = await readScope(source.prisma, scope.id);
  const sourceCalls = await source.prisma.llmCall.findMany({ where: { scopeId: scope.id } });
  const sourceLinks = await linksOf(source.prisma, scope.id);
  const sourceText = serializeScopeExport(sourceDoc);
  const write = (replace: boolean) =>
    target.prisma.$transaction(async (tx) => {
      if (replace) {
        await tx.scope.delete({ where: { id: scope.id } });
        // Links name their scope without a foreign key, so they do not go with it.
        await tx.identityLink.deleteMany({ where: { scopeId: scope.id } });
      }
      await insertScope(tx, sourceDoc, { scopeId: scope.id, scopeKey: scope.key, scopeExists: false });
      await insertCalls(tx, byId(sourceCalls));
      if (sourceLinks.length > 0) await tx.identityLink.createMany({ data: sourceLinks });
    }, IMPORT_TRANSACTION);

  let status: ScopeMigration['status'];
  let problem: string | undefined;
  const [byKey, withId, elsewhere] = await Promise.all([
    target.prisma.scope.findUnique({ where: { key: scope.key } }),
    target.prisma.scope.findUnique({ where: { id: scope.id } }),
    linksElsewhere(target.prisma, scope.id, sourceLinks),
  ]);
  if (byKey && byKey.id !== scope.id) {
    status = 'conflict';
    problem = `the target has another scope under the key "${scope.key}" (id ${byKey.id}); left alone`;
  } else if (elsewhere.length > 0) {
    status = 'conflict';
    problem = `the target links ${elsewhere.join(', ')} to another scope; left alone`;
  } else if (!withId) {
    await write(false);
    status = 'copied';
  } else {
    const targetDoc = await readScope(target.prisma, scope.id);
    const targetCalls = await target.prisma.llmCall.findMany({ where: { scopeId: scope.id } });
    const targetLinks = await linksOf(target.prisma, scope.id);
    const same =
      serializeScopeExport(targetDoc) === sourceText &&
      JSON.stringify(callRecords(targetCalls)) === JSON.stringify(callRecords(sourceCalls)) &&
      linkRecords(targetLinks) === linkRecords(sourceLinks);
    const extra = same ? [] : targetOnlyRows(sourceDoc, targetDoc, sourceCalls, targetCalls, sourceLinks, targetLinks);
    if (same) {
      status = 'unchanged';
    } else if (extra.length > 0) {
      status = 'conflict';
      problem = `the target's copy has rows the source lacks (${extra.join(', ')}): it was written to since; left alone`;
    } else {
      await write(true);
      status = 'updated';
    }
  }

  const vectorsReused = status === 'conflict' ? 0 : await carryVectors(params, plan, scope.id);
  const [sourceCounts, targetCounts] = await Promise.all([
    tableCounts(source.prisma, source.provider, scope.id),
    tableCounts(target.prisma, target.provider, scope.id),
  ]);
  const counts = Object.fromEntries(MIGRATED_TABLES.map((t) => [t, { source: sourceCounts[t], target: targetCounts[t] }])) as Record<MigratedTable, TableCount>;
  const countsEqual = MIGRATED_TABLES.every((t) => counts[t].source === counts[t].target);
  const contentEqual =
    status !== 'conflict' &&
    serializeScopeExport(await readScope(target.prisma, scope.id)) === sourceText &&
    JSON.stringify(callRecords(await target.prisma.llmCall.findMany({ where: { scopeId: scope.id } }))) === JSON.stringify(callRecords(sourceCalls)) &&
    linkRecords(await linksOf(target.prisma, scope.id)) === linkRecords(sourceLinks);
  if (status !== 'conflict' && !countsEqual) problem = 'row counts differ after the copy';
  else if (status !== 'conflict' && !contentEqual) problem = 'the copy read back from the target differs from the source';
  const pendingEmbeddings =
    (await target.prisma.episode.count({ where: { scopeId: scope.id, OR: [{ embeddedWith: null }, { embeddedWith: { not: params.embedder.embedder } }] } })) +
    (await target.prisma.memory.count({ where: { scopeId: scope.id, OR: [{ embeddedWith: null }, { embeddedWith: { not: params.embedder.embedder } }] } }));
  return {
    id: scope.id,
    key: scope.key,
    status,
    problem,
    counts,
    vectorsReused,
    pendingEmbeddings,
    verified: status !== 'conflict' && countsEqual && contentEqual,
  };
}

/** Copies every scope (and the LlmCall rows of no scope) from source to target and verifies the copy. */
export async function migrateStore(params: MigrateStoreParams): Promise<MigrationReport> {
  const { source, target } = params;
  const vectors = await decideVectorPlan(params);
  const scopes = byId(await source.prisma.scope.findMany({ select: { id: true, key: true } }));
  const results: ScopeMigration[] = [];
  for (const scope of scopes) {
    const result = await migrateScope(params, vectors.plan, scope);
    results.push(result);
    params.onScope?.(result, results.length, scopes.length);
  }

  const sourceCalls = await source.prisma.llmCall.findMany({ where: { scopeId: null } });
  const present = new Set((await target.prisma.llmCall.findMany({ where: { scopeId: null }, select: { id: true } })).map((c) => c.id));
  const missing = byId(sourceCalls.filter((c) => !present.has(c.id)));
  if (missing.length > 0) await target.prisma.$transaction((tx) => insertCalls(tx, missing), IMPORT_TRANSACTION);
  const unscopedLlmCalls = { source: sourceCalls.length, target: await target.prisma.llmCall.count({ where: { scopeId: null } }), copied: missing.length };

  const known = new Set(scopes.map((s) => s.id));
  const targetOnlyScopes = (await target.prisma.scope.findMany({ select: { id: true, key: true } }))
    .filter((s) => !known.has(s.id))
    .map((s) => s.key)
    .sort(compareStrings);
  return {
    vectors,
    scopes: results,
    unscopedLlmCalls,
    targetOnlyScopes,
    ok: results.every((r) => r.verified) && unscopedLlmCalls.target >= unscopedLlmCalls.source,
  };
}

/** Where one side of a migration lives, as the configuration describes it. */
export interface StoreLocation {
  readonly database: Config['database'];
  /** Its vector index; null when there are none to read (source) or the index is shared. */
  readonly vectors: Config['vectors'] | null;
}

/** {@link MigrateStoreParams} with the stores named by their settings instead of opened. */
export interface MigrateBetweenParams extends Omit<MigrateStoreParams, 'source' | 'target'> {
  readonly source: StoreLocation;
  readonly target: StoreLocation;
  readonly logger: Logger;
}

/**
 * Opens both databases (applying the target's migrations) and their vector indexes, migrates,
 * and closes everything again, whatever happened: what the `migrate-store` command runs.
 */
export async function migrateBetween(params: MigrateBetweenParams): Promise<MigrationReport> {
  const { source, target, logger, ...rest } = params;
  const opened: Array<Database | VectorIndex> = [];
  const open = async (location: StoreLocation): Promise<Store> => {
    const db = await openDatabase({ database: location.database, logger });
    opened.push(db);
    const index = location.vectors ? createVectorIndex(location.vectors, params.embedder.dimension) : null;
    if (index) opened.push(index);
    return { prisma: db.prisma, provider: db.provider, index };
  };
  try {
    const sourceStore = await open(source);
    const targetStore = await open(target);
    return await migrateStore({ ...rest, source: sourceStore, target: targetStore });
  } finally {
    for (const resource of opened.reverse()) await resource.close().catch(() => undefined);
  }
}
