/**
 * The audit trail as people and operators read it: the latest changes to a scope's memory and the
 * history of one memory. Every text in it passes the output filter ({@link showStoredValue}),
 * so a secret a model quoted in a reason is shown redacted like everywhere else.
 */
import type { AuditEvent, PrismaClient } from '../../storage/prisma';
import { showStoredValue } from '../output-filter';

export interface AuditLog {
  /** The latest `limit` events of the scope, newest first. */
  latest(scopeId: string, limit: number): Promise<AuditEvent[]>;
  /** Every event about one subject (a memory, an entity), oldest first. */
  history(scopeId: string, subjectId: string, subjectType?: string): Promise<AuditEvent[]>;
}

export function createAuditLog(prisma: PrismaClient): AuditLog {
  return {
    async latest(scopeId, limit) {
      const events = await prisma.auditEvent.findMany({ where: { scopeId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: limit });
      return events.map(showStoredValue);
    },
    async history(scopeId, subjectId, subjectType = 'memory') {
      const events = await prisma.auditEvent.findMany({ where: { scopeId, subjectType, subjectId }, orderBy: { createdAt: 'asc' } });
      return events.map(showStoredValue);
    },
  };
}
