/**
 * Pausing and resuming a scope's consolidation (`/pause`, the admin API, the CLI): the flag and
 * its audit event in one transaction, so the log shows every change and only real changes.
 */
import { NotFoundError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { PrismaClient } from '../storage/prisma';

/** What a pause or resume writes with. */
export interface PauseDeps {
  readonly prisma: PrismaClient;
  readonly clock: () => Date;
  readonly logger: Logger;
}

/**
 * Sets the scope's `paused` flag; true when it changed (pausing a paused scope changes nothing and
 * audits nothing). An unknown scope is a `scope.not_found` error.
 */
export async function setConsolidationPaused(
  { prisma, clock, logger }: PauseDeps,
  scopeId: string,
  paused: boolean,
  reason: string | undefined,
): Promise<boolean> {
  const changed = await prisma.$transaction(async (tx) => {
    const updated = await tx.scope.updateMany({ where: { id: scopeId, paused: !paused }, data: { paused } });
    if (updated.count === 0) return false;
    await tx.auditEvent.create({
      data: {
        scopeId,
        action: paused ? 'pause' : 'resume',
        subjectType: 'scope',
        subjectId: scopeId,
        before: { paused: !paused },
        after: { paused },
        reason: reason ?? null,
        createdAt: clock(),
      },
    });
    return true;
  });
  if (!changed && !(await prisma.scope.findUnique({ where: { id: scopeId }, select: { id: true } }))) {
    throw new NotFoundError(`No scope with id ${scopeId}`, { code: 'scope.not_found' });
  }
  if (changed) logger.info(paused ? 'consolidation paused' : 'consolidation resumed', { scopeId, reason });
  return changed;
}
