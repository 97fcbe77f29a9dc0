/**
 * The transaction of one forget (see forget-service.ts): the memories with their chains go, the
 * copies outside the rows are redacted, the digests are scrubbed, the soul is rebuilt and the export
 * files are rewritten, all before the commit. A preview runs the same work and rolls it back, so
 * what it counts is what confirming does.
 */
import fs from 'node:fs/promises';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { PrismaClient } from '../../storage/prisma';
import { scrubDigests } from '../digests/digest';
import { forgetMemory } from '../memories/memory-writer';
import { regenerateSoulIn } from '../profiles/soul';
import type { AfterCommit, AfterCommitOutcome } from './after-commit';
import { type ExportSetting, type ForgetCounts, NO_CHANGE, startEffects } from './forget-effects';
import { forgetWordsEverywhere } from './forget-words';
import { chainOf } from './memory-chain';
import { describeRemoval, quotesRemoval, redactDerived, scrubRelatedReasons } from './redact-derived';

export interface ForgetResult extends AfterCommitOutcome {
  /** Every memory row removed (chains included). */
  readonly removedIds: string[];
  /** Episodes whose text was replaced by {@link FORGOTTEN_TEXT}. */
  readonly episodesRedacted: number;
  /** Digests whose items were rewritten. */
  readonly digestsScrubbed: number;
  /** Export files under `DATA_DIR/exports` rewritten or deleted. */
  readonly exportFilesScrubbed: number;
  /** The soul's version afterwards. */
  readonly soulVersion: number | null;
  /** Everything that changed, as the preview counted it (forget-effects.ts). */
  readonly counts: ForgetCounts;
}

/** What one forget removes: memories (each with its chain) and, by words, the words everywhere. */
export interface ForgetRequest {
  readonly ids: readonly string[];
  readonly reason?: string;
  /** A missing id is an error (forgetting one memory) rather than skipped (a preview confirmed later). */
  readonly strict: boolean;
  /** Forgetting by words: what holds them. */
  readonly holds?: (text: string) => boolean;
  /** The ids the owner was shown: a chain reaching beyond them is refused. */
  readonly shown?: ReadonlySet<string>;
  /** Only count what would change: the transaction is rolled back and no file is touched. */
  readonly dryRun?: boolean;
}

/**
 * maxWait is past SQLite's 10 s lock wait (now on timers, which Prisma's maxWait counts): a lock
 * held too long ends in the store's clear "database is locked", not "unable to start a transaction".
 */
export const TX_OPTIONS = { maxWait: 15_000, timeout: 60_000 };

/** Carries a preview's counts out of the transaction it rolls back. */
class RolledBack extends Error {
  constructor(readonly counts: ForgetCounts) {
    super('preview rolled back');
  }
}

/** Runs a forget under its marker, or counts one without changing anything. */
export interface ForgetTransaction {
  run(scopeId: string, request: ForgetRequest, marker: string | null): Promise<ForgetResult>;
  count(scopeId: string, request: ForgetRequest): Promise<ForgetCounts>;
}

export function createForgetTransaction(deps: {
  readonly prisma: PrismaClient;
  readonly log: Logger;
  readonly clock: () => Date;
  /** Run before each forget: export files of earlier versions moved to where the scrub looks. */
  readonly adoptOldExports: () => Promise<void>;
  readonly exportSetting: () => ExportSetting | undefined;
  readonly soul?: { readonly maxTokens?: number; readonly defaultTimeZone?: string };
  readonly afterCommit: AfterCommit;
}): ForgetTransaction {
  const { prisma, log } = deps;

  async function run(scopeId: string, request: ForgetRequest, marker: string | null): Promise<ForgetResult> {
    await deps.adoptOldExports();
    const now = deps.clock();
    const done = await prisma.$transaction(async (tx) => {
      const roots: string[] = [];
      const chains = new Set<string>();
      for (const id of request.ids) {
        if (chains.has(id)) continue;
        const chain = await chainOf(tx, scopeId, id).catch((error: unknown) => {
          if (error instanceof NotFoundError && !request.strict) return [];
          throw error;
        });
        if (chain.length === 0) continue;
        roots.push(id);
        for (const m of chain) chains.add(m.id);
      }
      const unseen = request.shown ? [...chains].filter((id) => !request.shown!.has(id)) : [];
      if (unseen.length > 0) {
        throw new ValidationError('what matches changed since it was shown (a memory got a new version): ask again to see the whole list', {
          code: 'forget.changed',
        });
      }
      if (chains.size === 0 && !request.holds) return null;
      const scope = await tx.scope.findUniqueOrThrow({ where: { id: scopeId }, select: { id: true, key: true } });
      // Before any of the work: the counts and the export scrub compare the scope before and after.
      const effects = await startEffects(tx, scope, deps.exportSetting());
      // Read before the rows go: sources cascade with them.
      const removal = await describeRemoval(tx, scopeId, [...chains]);
      const removed = new Set<string>();
      for (const id of roots) {
        if (removed.has(id)) continue;
        for (const gone of await forgetMemory(tx, scopeId, id, { now, reason: request.reason })) removed.add(gone);
      }
      await scrubRelatedReasons(tx, scopeId, removed);
      let redacted = await redactDerived(tx, scopeId, removal, { now, holds: request.holds });
      if (request.holds) redacted += await forgetWordsEverywhere(tx, scopeId, request.holds, now);
      const scrubbed = await scrubDigests(tx, scopeId, [...removed], request.holds, deps.soul?.defaultTimeZone);
      // Inside the transaction: no moment exists at which the memory is gone and the soul still quotes it.
      const soul = await regenerateSoulIn(tx, scopeId, { ...deps.soul, now });
      // Before the commit: a crash after it must not leave the text in an export (a crash before it leaves less text, never more).
      const holds = request.holds ?? ((text: string) => quotesRemoval(text, removal));
      const counts = await effects.finish(tx, { removedMemories: removed.size, holds, dryRun: request.dryRun === true });
      if (request.dryRun) throw new RolledBack(counts);
      return { removed: [...removed], redacted, scrubbed, soulVersion: soul.version, files: counts.files, counts };
    }, TX_OPTIONS);
    if (!done) {
      if (marker) await fs.rm(marker, { force: true });
      const soulVersion = (await prisma.profile.findUnique({ where: { scopeId }, select: { version: true } }))?.version ?? 0;
      return {
        removedIds: [],
        episodesRedacted: 0,
        digestsScrubbed: 0,
        exportFilesScrubbed: 0,
        vectorsDeleted: true,
        checkpointed: true,
        soulVersion,
        counts: NO_CHANGE,
      };
    }
    log.info('forgotten at the owner\u2019s request', {
      scopeId,
      count: done.removed.length,
      digestsScrubbed: done.scrubbed,
      episodesRedacted: done.redacted,
      exportFiles: done.files,
    });
    return {
      removedIds: done.removed,
      episodesRedacted: done.redacted,
      digestsScrubbed: done.scrubbed,
      exportFilesScrubbed: done.files,
      soulVersion: done.soulVersion,
      counts: done.counts,
      ...(await deps.afterCommit(scopeId, [marker])),
    };
  }

  /** What {@link run} would change: the same work, rolled back (no marker, no file touched). */
  async function count(scopeId: string, request: ForgetRequest): Promise<ForgetCounts> {
    try {
      await run(scopeId, { ...request, dryRun: true }, null);
    } catch (error) {
      if (error instanceof RolledBack) return error.counts;
      throw error;
    }
    return NO_CHANGE;
  }

  return { run, count };
}
