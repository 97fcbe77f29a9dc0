/**
 * Forgetting at the owner's request: unlike decay, which only fades a memory, forgetting removes
 * what was said from everywhere the service keeps it.
 *
 * One memory is forgotten with its whole supersession chain (the old and new versions are the
 * same knowledge); forgetting by words removes exactly the memories (all their versions) the
 * preview listed, and the words from every other text of the scope (forget-words.ts).
 *
 * One transaction holds everything that lives in the database: the rows go (links, sources and
 * full-text rows with them), the audit keeps a 'forget' event without the text, the copies outside
 * the rows are redacted (redact-derived.ts), the digests are scrubbed and the soul is rebuilt, and
 * the export files of the scope are rewritten before the commit (export-files.ts). A kill at any
 * moment leaves either nothing forgotten or everything forgotten in the database. A preview runs
 * the same work in a transaction that is rolled back, so what it counts (forget-effects.ts) is
 * what confirming does.
 *
 * What cannot share the transaction follows the commit, and is repaired at the next start when a
 * kill interrupts it: the full-text index drops what the deleted rows left in its segments and the
 * write-ahead log is checkpointed (so no old page of the database file holds the text), then the
 * vectors under tombstones are deleted and the vector store is checkpointed too. A marker file
 * written before the transaction and removed once this is done tells the next start to finish it.
 */
import fs from 'node:fs/promises';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { PrismaClient } from '../../storage/prisma';
import { queryTerms, type FullTextIndex } from '../../storage/full-text';
import type { VectorIndex } from '../vectors/vector-index';
import { startEffects, type ForgetCounts } from './forget-effects';
import { onceAdoptingLegacyExports } from './legacy-exports';
import { pendingMarkers } from './pending-markers';
import type { ExportViewReader } from './export-gone';
import { applyEdit, type EditOutcome, type EpisodeEdit } from './edit-episode';
import { wordsMatcher } from './text-match';
import { aboutSpeaker } from '../memories/speakers';
import { createAfterCommit } from './after-commit';
import { chainOf, type MemoryMatch } from './memory-chain';
import { createForgetTransaction, type ForgetRequest, type ForgetResult, TX_OPTIONS } from './forget-transaction';
import { purgeScopeIn } from './purge-scope';

export type { MemoryMatch } from './memory-chain';
export type { ForgetResult } from './forget-transaction';

export interface ForgetServiceDeps {
  readonly prisma: PrismaClient;
  readonly index: VectorIndex;
  /** When given, what deleted rows left inside the full-text index is purged after each forget. */
  readonly fullText?: Pick<FullTextIndex, 'purgeDeleted'>;
  /** `DATA_DIR/exports`: the export files Nocturne wrote there for the scope lose the forgotten text. */
  readonly exportsDir?: string;
  /** How the scope's export reads, so the files lose what the rows lost (src/export/export-view.ts). */
  readonly readExportView?: ExportViewReader;
  /** The store's own files (database, write-ahead logs, vectors): never edited or deleted by the export scrub. */
  readonly protectedFiles?: readonly string[];
  /**
   * Where markers live while a forget's after-commit work (full-text purge, checkpoints, vector
   * deletes) is unfinished: one file `<pendingFile>.<pid>.<n>` per forget, so concurrent forgets of
   * several processes never clear each other's; {@link ForgetService.repair} finishes the work of
   * a process that died at the next start.
   */
  readonly pendingFile?: string;
  /** How the soul is rebuilt after a forget: SOUL_MAX_TOKENS and the default time zone. */
  readonly soul?: { readonly maxTokens?: number; readonly defaultTimeZone?: string };
  readonly logger: Logger;
  readonly clock?: () => Date;
}

/** What `forgetMatching` found; nothing is removed until `confirm()`. */
export interface ForgetPreview {
  /** The words that had to match (lower-cased, stopwords dropped). */
  readonly terms: string[];
  /** Every memory that goes: the ones holding the words with every version of their chains. */
  readonly matches: MemoryMatch[];
  /** Messages (the person's and the agent's) whose text confirming replaces: `counts.messages`. */
  readonly episodes: number;
  /** What confirming changes, counted by doing it in a transaction that is rolled back. */
  readonly counts: ForgetCounts;
  /**
   * Forgets exactly the previewed memories and the words everywhere else. Ones already gone are
   * skipped; if a chain gained a version since the preview, nothing is removed (ValidationError
   * `forget.changed`): a version the owner was not shown never goes, and no chain is left dangling.
   */
  confirm(options?: { reason?: string }): Promise<ForgetResult>;
}

export interface ForgetService {
  /** The memories `forgetMemory` would remove: the memory and its supersession chain. */
  preview(scopeId: string, memoryId: string): Promise<MemoryMatch[]>;
  forgetMemory(scopeId: string, memoryId: string, options?: { reason?: string }): Promise<ForgetResult>;
  /**
   * A memory and its supersession chain, for the owner to confirm (`/forget N`); nothing goes
   * until `confirm()`, which removes exactly what was shown (ValidationError `forget.changed` when
   * the chain gained a version since). NotFoundError when the memory is not in the scope.
   */
  prepareForget(scopeId: string, memoryId: string): Promise<ForgetPreview>;
  /**
   * Memories (of any state) whose text contains every word, with their chains, for the owner to
   * confirm; confirming also takes the words out of everything else of the scope. With
   * `speakerId` (a member of a group who is not one of its administrators): only the memories
   * about that member (memory/memories/speakers.ts) and what they were learned from; the words
   * stay in what others said.
   */
  forgetMatching(scopeId: string, words: string, options?: { readonly speakerId?: string }): Promise<ForgetPreview>;
  /**
   * The person edited a message: its new text replaces the old one everywhere it lives, in one
   * transaction with the same after-commit work as a forget (edit-episode.ts). Nothing happens
   * for an unknown id, an unchanged text or a forgotten message (the outcome says which).
   */
  editEpisode(scopeId: string, edit: EpisodeEdit): Promise<EditOutcome>;
  /** Removes every memory of the scope (seed 001 purge); returns how many. */
  purgeScope(scopeId: string, options?: { reason?: string }): Promise<number>;
  /** Finishes the after-commit work of a forget a crash interrupted (run at start); true when there was some. */
  repair(): Promise<boolean>;
}

/** The marker file's name under DATA_DIR (see {@link ForgetServiceDeps.pendingFile}). */
export const FORGET_PENDING_FILE = 'forget-pending';

export { FORGOTTEN_TEXT } from './redact-derived';

export function createForgetService(deps: ForgetServiceDeps): ForgetService {
  const { prisma } = deps;
  const log = deps.logger.child({ component: 'forget' });
  const clock = deps.clock ?? (() => new Date());
  const { marked, orphanMarkers } = pendingMarkers(deps.pendingFile);
  const afterCommit = createAfterCommit({ prisma, index: deps.index, fullText: deps.fullText, log });

  /** Once per process, before the first forget: export files of earlier versions moved to where the scrub looks. */
  const adoptOldExports = onceAdoptingLegacyExports(deps.exportsDir, () => prisma.scope.findMany({ select: { id: true, key: true } }), log);

  /** Where the export files are and how the scope's export reads, for the export scrub. */
  function exportSetting() {
    return deps.exportsDir
      ? {
          exportsDir: deps.exportsDir,
          protectedFiles: deps.protectedFiles,
          defaultTimeZone: deps.soul?.defaultTimeZone ?? 'UTC',
          readView: deps.readExportView,
        }
      : undefined;
  }

  const transaction = createForgetTransaction({ prisma, log, clock, adoptOldExports, exportSetting, soul: deps.soul, afterCommit });

  /** Removes what the request names in one transaction; see the module comment. */
  function forget(scopeId: string, request: ForgetRequest): Promise<ForgetResult> {
    return marked((marker) => transaction.run(scopeId, request, marker));
  }
  const countForget = transaction.count;

  return {
    preview: (scopeId, memoryId) => chainOf(prisma, scopeId, memoryId),

    forgetMemory(scopeId, memoryId, options = {}) {
      return forget(scopeId, { ids: [memoryId], reason: options.reason, strict: true });
    },

    async prepareForget(scopeId, memoryId) {
      const matches = await chainOf(prisma, scopeId, memoryId);
      const shown = new Set(matches.map((m) => m.id));
      const counts = await countForget(scopeId, { ids: [memoryId], strict: false, shown });
      return {
        terms: [],
        matches,
        episodes: counts.messages,
        counts,
        confirm: (options = {}) => forget(scopeId, { ids: [memoryId], reason: options.reason, strict: false, shown }),
      };
    },

    async forgetMatching(scopeId, words, options = {}) {
      const terms = queryTerms(words);
      if (terms.length === 0) throw new ValidationError('say which words to forget, e.g. "my ex"', { code: 'forget.no_words' });
      const matcher = wordsMatcher(terms);
      const { speakerId } = options;
      // A member forgets their own memories only: the words everywhere else are other people's too.
      const holds = speakerId === undefined ? matcher : undefined;
      const memories = await prisma.memory.findMany({
        where: { scopeId, ...(speakerId === undefined ? {} : aboutSpeaker(speakerId)) },
        select: { id: true, content: true },
        orderBy: [{ validFrom: 'asc' }, { id: 'asc' }],
      });
      // Every version of every matched chain is listed: confirming removes exactly what was shown.
      const matches = new Map<string, MemoryMatch>();
      for (const m of memories) {
        if (matches.has(m.id) || !matcher(m.content)) continue;
        for (const version of await chainOf(prisma, scopeId, m.id)) matches.set(version.id, version);
      }
      const shown = new Set(matches.keys());
      // Text that lives only in a summary, an entity or an export file counts too: nothing is left out of the question.
      const counts = await countForget(scopeId, { ids: [...shown], strict: false, holds, shown });
      return {
        terms,
        matches: [...matches.values()],
        episodes: counts.messages,
        counts,
        confirm: (options = {}) => forget(scopeId, { ids: [...shown], reason: options.reason, strict: false, holds, shown }),
      };
    },

    editEpisode(scopeId, edit) {
      return marked(async (marker) => {
        await adoptOldExports();
        const now = clock();
        const outcome = await prisma.$transaction(async (tx) => {
          const scope = await tx.scope.findUniqueOrThrow({ where: { id: scopeId }, select: { id: true, key: true } });
          const effects = await startEffects(tx, scope, exportSetting());
          const applied = await applyEdit(tx, scopeId, edit, now);
          if (applied.outcome.status === 'edited') await effects.finish(tx, { removedMemories: 0, holds: applied.holds, dryRun: false });
          return applied.outcome;
        }, TX_OPTIONS);
        if (outcome.status !== 'edited') {
          if (marker) await fs.rm(marker, { force: true });
          return outcome;
        }
        await afterCommit(scopeId, [marker]);
        // The embedding worker may have embedded the new text before the tombstone of the old
        // vector was flushed (which then deleted it): embedded again, to be sure it has one.
        await prisma.episode.updateMany({ where: { scopeId, id: outcome.episodeId }, data: { embeddedWith: null } });
        log.info('a message was edited by its author', { scopeId, episodeId: outcome.episodeId, memoriesToRecheck: outcome.memoriesToRecheck.length });
        return outcome;
      });
    },

    purgeScope(scopeId, options = {}) {
      return marked(async (marker) => {
        await adoptOldExports();
        const now = clock();
        const setting = { now, reason: options.reason, exportsDir: deps.exportsDir, protectedFiles: deps.protectedFiles, soul: deps.soul };
        const ids = await prisma.$transaction((tx) => purgeScopeIn(tx, scopeId, setting), TX_OPTIONS);
        if (ids.length > 0) log.info('scope purged', { scopeId, count: ids.length });
        await afterCommit(ids.length > 0 ? scopeId : null, [marker]);
        return ids.length;
      });
    },

    async repair() {
      const orphans = await orphanMarkers();
      if (orphans.length === 0) return false;
      log.warn('finishing a forget that was interrupted: purging the full-text index, checkpointing, deleting vectors');
      await afterCommit(null, orphans);
      return true;
    },
  };
}
