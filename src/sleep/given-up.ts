/**
 * Messages consolidation gave up on (no usable model answer after `SLEEP_MAX_ATTEMPTS` tries)
 * stay stored but are no longer picked up by any run. Once the cause is gone (a model that
 * answers again, a bigger model), the operator or the person tries them again: their attempt
 * counts go back to zero, so the next run (or the one started with the retry) reads them, and
 * the retry is recorded in the audit trail with who asked and how many messages it freed.
 */
import { NotFoundError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { PrismaClient } from '../storage/prisma';

/** The audit action of a retry (the digest and `audit` show it beside `consolidation_gave_up`). */
export const RETRY_GIVEN_UP_ACTION = 'consolidation_retry';

export interface GivenUpMessages {
  /** How many of the scope's messages consolidation gave up on. */
  count(scopeId: string): Promise<number>;
  /**
   * Makes them eligible again (audited with `reason`); returns how many. Zero writes nothing.
   * Throws NotFoundError for an unknown scope.
   */
  retry(scopeId: string, reason: string): Promise<number>;
}

export function createGivenUpMessages(deps: { prisma: PrismaClient; maxAttempts: number; logger: Logger; clock?: () => Date }): GivenUpMessages {
  const { prisma, maxAttempts } = deps;
  const log = deps.logger.child({ component: 'sleep' });
  const givenUp = (scopeId: string) => ({ scopeId, consolidated: false, consolidationAttempts: { gte: maxAttempts } });
  return {
    count: (scopeId) => prisma.episode.count({ where: givenUp(scopeId) }),
    async retry(scopeId, reason) {
      if (!(await prisma.scope.findUnique({ where: { id: scopeId }, select: { id: true } }))) {
        throw new NotFoundError(`No scope with id ${scopeId}`, { code: 'scope.not_found' });
      }
      const freed = await prisma.$transaction(async (tx) => {
        const rows = await tx.episode.findMany({ where: givenUp(scopeId), select: { id: true } });
        if (rows.length === 0) return 0;
        const ids = rows.map((r) => r.id);
        await tx.episode.updateMany({ where: { scopeId, id: { in: ids } }, data: { consolidationAttempts: 0 } });
        await tx.auditEvent.create({
          data: {
            scopeId,
            action: RETRY_GIVEN_UP_ACTION,
            subjectType: 'scope',
            subjectId: scopeId,
            before: { episodes: ids.length, attempts: maxAttempts },
            after: { episodes: ids.length, episodeIds: ids, attempts: 0 },
            reason,
            createdAt: (deps.clock ?? (() => new Date()))(),
          },
        });
        return ids.length;
      });
      if (freed > 0) log.info('messages consolidation gave up on are tried again', { scopeId, episodes: freed, reason });
      return freed;
    },
  };
}
