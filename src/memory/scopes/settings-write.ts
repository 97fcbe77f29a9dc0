/**
 * What every change of a scope's settings document does before and beside its write, whichever
 * door changed it (digest time and zone, capped mode, sleep window, budgets): the whole document is
 * checked as the scheduler will read it, and the change is one audit event with the fields before
 * and after.
 */
import { ValidationError } from '../../shared/errors';
import type { Prisma } from '../../storage/prisma';
import { scopeSettingsSchema } from './scope-settings';

/** Throws a ValidationError naming each problem when the document would not be readable. */
export function requireReadableSettings(settings: Record<string, unknown>): void {
  const checked = scopeSettingsSchema.safeParse(settings);
  if (checked.success) return;
  const problems = checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
  throw new ValidationError(`these settings would be invalid: ${problems}`, { code: 'scope.settings_invalid' });
}

/** The audit event of a settings change (the changed fields only, before and after). */
export function settingsAuditEvent(
  scopeId: string,
  change: { readonly before: Record<string, unknown>; readonly after: Record<string, unknown> },
  reason: string | null,
  now: Date,
): Prisma.AuditEventUncheckedCreateInput {
  return {
    scopeId,
    action: 'settings',
    subjectType: 'scope',
    subjectId: scopeId,
    before: change.before as Prisma.InputJsonObject,
    after: change.after as Prisma.InputJsonObject,
    reason,
    createdAt: now,
  };
}
