/**
 * The part of a forget that cannot share its transaction: the full-text index drops what the
 * deleted rows left in its segments and the database's log is checkpointed, then the vectors under
 * tombstones are deleted and the vector store's log is checkpointed. The forget's marker files go
 * only once all of it is done, so the next start finishes what a kill interrupted.
 */
import fs from 'node:fs/promises';
import type { Logger } from '../../shared/logger';
import type { FullTextIndex } from '../../storage/full-text';
import type { PrismaClient } from '../../storage/prisma';
import { flushTombstones } from '../vectors/tombstones';
import type { VectorIndex } from '../vectors/vector-index';

const VECTOR_BATCH = 500;

/** How the work after a commit went; both are reported in a forget's result. */
export interface AfterCommitOutcome {
  /** False when the vector index could not be updated (logged; search ignores vectors of missing rows). */
  readonly vectorsDeleted: boolean;
  /** False when a reader of another process kept the write-ahead logs from being emptied (retried at the next start). */
  readonly checkpointed: boolean;
}

/** Runs the work after a forget's commit, then removes the given markers when nothing is left to redo. */
export type AfterCommit = (scopeId: string | null, done: ReadonlyArray<string | null>) => Promise<AfterCommitOutcome>;

/**
 * A failure is logged and reported, never rolled back into keeping the memory: the rows are gone
 * already, and the marker left in place has the next start try again.
 */
export function createAfterCommit(deps: {
  readonly prisma: PrismaClient;
  readonly index: VectorIndex;
  readonly fullText?: Pick<FullTextIndex, 'purgeDeleted'>;
  readonly log: Logger;
}): AfterCommit {
  const { prisma, index, log } = deps;
  return async (scopeId, done) => {
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
  };
}
