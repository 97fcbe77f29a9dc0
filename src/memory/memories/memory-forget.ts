/**
 * The writer's one deletion: a memory forgotten at the owner's request goes with its whole
 * supersession chain, leaving a tombstone for its vectors and an audit event without its text.
 */
import type { ChangeOrigin, Tx } from './memory-writer';
import { cleanReason } from './memory-audit';
import { load } from './memory-write-checks';
import { writeTombstones } from '../vectors/tombstones';

/**
 * Removes a memory and every version it superseded or that superseded it (the whole chain is
 * the same knowledge). The rows go (links and sources cascade, full-text triggers fire); the
 * audit keeps that something was forgotten, without its text. Their vectors get tombstones in
 * the same transaction (see vectors/tombstones.ts). Returns the ids removed so the caller can
 * flush the tombstones and rebuild derived documents.
 */
export async function forgetMemory(tx: Tx, scopeId: string, id: string, origin: ChangeOrigin): Promise<string[]> {
  const root = await load(tx, scopeId, id);
  const chain = new Set<string>([root.id]);
  let frontier = [root.id];
  while (frontier.length > 0) {
    const related = await tx.memory.findMany({
      where: { scopeId, OR: [{ id: { in: frontier }, supersededById: { not: null } }, { supersededById: { in: frontier } }] },
      select: { id: true, supersededById: true },
    });
    const next: string[] = [];
    for (const r of related) {
      for (const candidate of [r.id, r.supersededById]) {
        if (candidate && !chain.has(candidate)) {
          chain.add(candidate);
          next.push(candidate);
        }
      }
    }
    frontier = next;
  }
  const ids = [...chain];
  // Break the supersession references inside the chain first (they are NoAction foreign keys).
  await tx.memory.updateMany({ where: { scopeId, id: { in: ids } }, data: { supersededById: null } });
  // Scrub the text from earlier audit events of these memories: the audit keeps what happened, not what was said.
  await tx.auditEvent.updateMany({
    where: { scopeId, subjectType: 'memory', subjectId: { in: ids } },
    data: { before: { redacted: true }, after: { redacted: true }, reason: null },
  });
  await tx.memory.deleteMany({ where: { scopeId, id: { in: ids } } });
  await writeTombstones(tx, scopeId, 'memory', ids);
  await tx.auditEvent.create({
    data: {
      scopeId,
      runId: origin.runId ?? null,
      action: 'forget',
      subjectType: 'memory',
      subjectId: root.id,
      after: { removed: ids.length, category: root.category },
      reason: cleanReason(origin.reason) ?? 'forgotten at the owner\u2019s request',
      createdAt: origin.now,
    },
  });
  return ids;
}
