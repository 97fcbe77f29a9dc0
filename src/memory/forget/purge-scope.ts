/**
 * The transaction of a purge: every memory of the scope, the profiles of the people and things
 * learned, and the export files Nocturne wrote for it go; what was said stays, with what it quoted
 * of the memories redacted. The forget service runs it under a marker and does the after-commit work.
 */
import { NotFoundError } from '../../shared/errors';
import { scrubDigests } from '../digests/digest';
import { regenerateSoulIn } from '../profiles/soul';
import { delegateOf, PURGE_DELETED } from '../scopes/scope-data-walk';
import { writeTombstones } from '../vectors/tombstones';
import { removeExportFiles, scopeExportFiles } from './export-files';
import { describeRemoval, redactDerived, redactionOf, type Tx } from './redact-derived';

/** What a purge needs beyond the transaction: where the exports are and how the soul is rebuilt. */
export interface PurgeSetting {
  readonly now: Date;
  readonly reason?: string;
  readonly exportsDir?: string;
  readonly protectedFiles?: readonly string[];
  readonly soul?: { readonly maxTokens?: number; readonly defaultTimeZone?: string };
}

/** Purges the scope inside `tx`; returns the ids of the memories removed. NotFoundError for an unknown scope. */
export async function purgeScopeIn(tx: Tx, scopeId: string, setting: PurgeSetting): Promise<string[]> {
  const { now } = setting;
  const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { id: true, key: true } });
  if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
  // The memory page's browser sessions end even when there is nothing else to purge.
  await tx.webSession.deleteMany({ where: { scopeId } });
  const ids = (await tx.memory.findMany({ where: { scopeId }, select: { id: true } })).map((m) => m.id);
  // With no memory left, the people and things learned and the exports still go.
  const location = setting.exportsDir ? { exportsDir: setting.exportsDir, scope, protectedFiles: setting.protectedFiles } : undefined;
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
  await scrubDigests(tx, scopeId, ids, undefined, setting.soul?.defaultTimeZone);
  await redactDerived(tx, scopeId, removal, { now });
  await tx.auditEvent.create({
    data: {
      scopeId,
      action: 'forget',
      subjectType: 'scope',
      subjectId: scopeId,
      after: { removed: ids.length },
      reason: setting.reason ?? 'every memory purged at the owner\u2019s request',
      createdAt: now,
    },
  });
  await regenerateSoulIn(tx, scopeId, { ...setting.soul, now });
  // Before the commit, as for a forget: the exports Nocturne wrote quote what was learned.
  if (location) await removeExportFiles(location);
  return ids;
}
