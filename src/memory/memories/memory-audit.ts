/**
 * The audit trail of the memory writer: every change to a memory leaves one audit event with the
 * state before and after ({@link snapshot}), the reason and the run. Reasons are model-written, so
 * they are stored redacted like contents ({@link cleanReason}).
 */
import { redactSecrets } from '../../shared/redact';
import type { Memory, Prisma } from '../../storage/prisma';
import type { ChangeOrigin, Tx } from './memory-writer';

/** The audited view of a memory: everything but ids and timestamps the reader does not need. */
export function snapshot(m: Memory): Prisma.InputJsonObject {
  return {
    category: m.category,
    content: m.content,
    confidence: round(m.confidence),
    importance: round(m.importance),
    active: m.active,
    reinforcementCount: m.reinforcementCount,
    sourceType: m.sourceType,
    validFrom: m.validFrom.toISOString(),
    validTo: m.validTo ? m.validTo.toISOString() : null,
    supersededById: m.supersededById,
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Records one change of a memory (`before`/`after` are snapshots; null when there is none). */
export async function audit(
  tx: Tx,
  scopeId: string,
  origin: ChangeOrigin,
  action: string,
  subjectId: string,
  before: Prisma.InputJsonObject | null,
  after: Prisma.InputJsonObject | null,
  reason?: string,
): Promise<void> {
  await tx.auditEvent.create({
    data: {
      scopeId,
      runId: origin.runId ?? null,
      action,
      subjectType: 'memory',
      subjectId,
      before: before ?? undefined,
      after: after ?? undefined,
      reason: cleanReason(reason ?? origin.reason),
      createdAt: origin.now,
    },
  });
}

/** A reason as stored (audit events, links): model-written, so redacted like contents. */
export function cleanReason(reason: string | undefined): string | null {
  return reason === undefined || reason === null ? null : redactSecrets(reason);
}
