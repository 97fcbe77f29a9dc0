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
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { PrismaClient } from '../../storage/prisma';
import { queryTerms, type FullTextIndex } from '../../storage/full-text';
import { scrubDigests } from '../digests/digest';
import { regenerateSoulIn } from '../profiles/soul';
import { flushTombstones, writeTombstones } from '../vectors/tombstones';
import type { VectorIndex } from '../vectors/vector-index';
import { forgetMemory } from '../memories/memory-writer';
import { removeExportFiles, scopeExportFiles } from './export-files';
import { NO_CHANGE, startEffects, type ForgetCounts } from './forget-effects';
import { onceAdoptingLegacyExports } from './legacy-exports';
import { pendingMarkers } from './pending-markers';
import type { ExportViewReader } from './export-gone';
import { forgetWordsEverywhere } from './forget-words';
import { applyEdit, type EditOutcome, type EpisodeEdit } from './edit-episode';
import { describeRemoval, quotesRemoval, redactDerived, redactionOf, scrubRelatedReasons, type Tx } from './redact-derived';
import { delegateOf, PURGE_DELETED } from '../scopes/scope-data-map';
import { wordsMatcher } from './text-match';
import { aboutSpeaker } from '../memories/speakers';

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

/** A memory shown before it is forgotten. */
export interface MemoryMatch {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  /** active | faded | superseded */
  readonly state: 'active' | 'faded' | 'superseded';
}

export interface ForgetResult {
  /** Every memory row removed (chains included). */
  readonly removedIds: string[];
  /** Episodes whose text was replaced by {@link FORGOTTEN_TEXT}. */
  readonly episodesRedacted: number;
  /** Digests whose items were rewritten. */
  readonly digestsScrubbed: number;
  /** Export files under `DATA_DIR/exports` rewritten or deleted. */
  readonly exportFilesScrubbed: number;
  /** False when the vector index could not be updated (logged; search ignores vectors of missing rows). */
  readonly vectorsDeleted: boolean;
  /** False when a reader of another process kept the write-ahead logs from being emptied (retried at the next start). */
  readonly checkpointed: boolean;
  /** The soul's version afterwards. */
  readonly soulVersion: number | null;
  /** Everything that changed, as the preview counted it (forget-effects.ts). */
  readonly counts: ForgetCounts;
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
const VECTOR_BATCH = 500;
/**
 * maxWait is past SQLite's 10 s lock wait (now on timers, which Prisma's maxWait counts): a lock
 * held too long ends in the store's clear "database is locked", not "unable to start a transaction".
 */
const TX_OPTIONS = { maxWait: 15_000, timeout: 60_000 };

export { FORGOTTEN_TEXT } from './redact-derived';

type Db = Tx | PrismaClient;

function stateOf(m: { active: boolean; validTo: Date | null }): MemoryMatch['state'] {
  return m.validTo ? 'superseded' : m.active ? 'active' : 'faded';
}

function toMatch(m: { id: string; category: string; content: string; confidence: number; active: boolean; validTo: Date | null }): MemoryMatch {
  return { id: m.id, category: m.category, content: m.content, confidence: m.confidence, state: stateOf(m) };
}

/** What one forget removes: memories (each with its chain) and, by words, the words everywhere. */
interface ForgetRequest {
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

/** Carries a preview's counts out of the transaction it rolls back. */
class RolledBack extends Error {
  constructor(readonly counts: ForgetCounts) {
    super('preview rolled back');
  }
}

export function createForgetService(deps: ForgetServiceDeps): ForgetService {
  const { prisma, index } = deps;
  const log = deps.logger.child({ component: 'forget' });
  const clock = deps.clock ?? (() => new Date());

  async function chainOf(scopeId: string, memoryId: string, db: Db = prisma): Promise<MemoryMatch[]> {
    const select = { id: true, category: true, content: true, confidence: true, active: true, validTo: true, supersededById: true } as const;
    const root = await db.memory.findFirst({ where: { scopeId, id: memoryId }, select });
    if (!root)
      throw new NotFoundError(`Memory ${memoryId} is not among the memories kept here (it may have been forgotten already)`, { code: 'memory.not_found' });
    const chain = new Map([[root.id, root]]);
    let frontier = [root.id];
    while (frontier.length > 0) {
      const ids = [...frontier];
      const pointedTo = [...chain.values()].filter((m) => ids.includes(m.id) && m.supersededById).map((m) => m.supersededById!);
      const related = await db.memory.findMany({ where: { scopeId, OR: [{ id: { in: pointedTo } }, { supersededById: { in: ids } }] }, select });
      frontier = [];
      for (const m of related) {
        if (chain.has(m.id)) continue;
        chain.set(m.id, m);
        frontier.push(m.id);
      }
    }
    return [...chain.values()].sort((a, b) => Number(Boolean(a.validTo)) - Number(Boolean(b.validTo))).map(toMatch);
  }

  const { marked, orphanMarkers } = pendingMarkers(deps.pendingFile);

  /**
   * After the commit: the full-text index drops the deleted rows' terms and the database's log is
   * checkpointed, then the tombstoned vectors go and the vector store's log is checkpointed. A
   * failure is logged and reported, never rolled back into keeping the memory.
   */
  async function afterCommit(scopeId: string | null, done: ReadonlyArray<string | null>): Promise<Pick<ForgetResult, 'vectorsDeleted' | 'checkpointed'>> {
    let checkpointed = true;
    try {
      checkpointed = (await deps.fullText?.purgeDeleted()) ?? true;
    } catch (error) {
      checkpointed = false;
      // Not findable any more (the rows are gone); only the index's segments still hold the words until the next purge.
      log.error('could not purge the full-text index after forgetting; the words leave its segments at the next forget or start', { scopeId, error });
    }
    let vectorsDeleted = true;
    try {
      while ((await flushTombstones(prisma, index, VECTOR_BATCH)) > 0);
      if (index.checkpoint && !(await index.checkpoint())) checkpointed = false;
    } catch (error) {
      vectorsDeleted = false;
      log.error('forgotten rows are gone from the database; their vectors will be deleted as soon as the vector index answers', { scopeId, error });
    }
    if (!checkpointed) log.warn('another process kept a write-ahead log from being emptied after forgetting; retried at the next start', { scopeId });
    if (checkpointed && vectorsDeleted) for (const marker of done) if (marker) await fs.rm(marker, { force: true });
    return { vectorsDeleted, checkpointed };
  }

  /** Removes what the request names in one transaction; see the module comment. */
  function forget(scopeId: string, request: ForgetRequest): Promise<ForgetResult> {
    return marked((marker) => forgetMarked(scopeId, request, marker));
  }

  /** What {@link forget} would change: the same work, rolled back (no marker, no file touched). */
  async function countForget(scopeId: string, request: ForgetRequest): Promise<ForgetCounts> {
    try {
      await forgetMarked(scopeId, { ...request, dryRun: true }, null);
    } catch (error) {
      if (error instanceof RolledBack) return error.counts;
      throw error;
    }
    return NO_CHANGE;
  }

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

  async function forgetMarked(scopeId: string, request: ForgetRequest, marker: string | null): Promise<ForgetResult> {
    await adoptOldExports();
    const now = clock();
    const done = await prisma.$transaction(async (tx) => {
      const roots: string[] = [];
      const chains = new Set<string>();
      for (const id of request.ids) {
        if (chains.has(id)) continue;
        const chain = await chainOf(scopeId, id, tx).catch((error: unknown) => {
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
      const effects = await startEffects(tx, scope, exportSetting());
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
      ...(await afterCommit(scopeId, [marker])),
    };
  }

  return {
    preview: chainOf,

    forgetMemory(scopeId, memoryId, options = {}) {
      return forget(scopeId, { ids: [memoryId], reason: options.reason, strict: true });
    },

    async prepareForget(scopeId, memoryId) {
      const matches = await chainOf(scopeId, memoryId);
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
        for (const version of await chainOf(scopeId, m.id)) matches.set(version.id, version);
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
        const ids = await prisma.$transaction(async (tx) => {
          const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { id: true, key: true } });
          if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
          const ids = (await tx.memory.findMany({ where: { scopeId }, select: { id: true } })).map((m) => m.id);
          // With no memory left, the people and things learned and the exports still go.
          const location = deps.exportsDir ? { exportsDir: deps.exportsDir, scope, protectedFiles: deps.protectedFiles } : undefined;
          const files = location ? await scopeExportFiles(location) : [];
          if (ids.length === 0 && files.length === 0 && (await tx.entity.count({ where: { scopeId } })) === 0) return ids;
          const removal = await describeRemoval(tx, scopeId, ids);
          // Supersession references are NoAction foreign keys: break them before the rows go.
          await tx.memory.updateMany({ where: { scopeId }, data: { supersededById: null } });
          await tx.auditEvent.updateMany({
            where: { scopeId, subjectType: { in: ['memory', 'entity'] }, action: { not: 'forget' } },
            data: redactionOf('AuditEvent'),
          });
          // Memories and the profiles of people and things go (scope-data-map.ts); the rest cascades.
          for (const model of PURGE_DELETED) await delegateOf(tx, model).deleteMany({ where: { scopeId } });
          await writeTombstones(tx, scopeId, 'memory', ids);
          await scrubDigests(tx, scopeId, ids, undefined, deps.soul?.defaultTimeZone);
          await redactDerived(tx, scopeId, removal, { now });
          await tx.auditEvent.create({
            data: {
              scopeId,
              action: 'forget',
              subjectType: 'scope',
              subjectId: scopeId,
              after: { removed: ids.length },
              reason: options.reason ?? 'every memory purged at the owner\u2019s request',
              createdAt: now,
            },
          });
          await regenerateSoulIn(tx, scopeId, { ...deps.soul, now });
          // Before the commit, as for a forget: the exports Nocturne wrote quote what was learned.
          if (location) await removeExportFiles(location);
          return ids;
        }, TX_OPTIONS);
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
