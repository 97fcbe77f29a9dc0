/**
 * `audit --scope S [--limit N] [--json]`: the latest changes to a scope's memory, newest first,
 * each with what it changed and why (seed 000 audit trail).
 */
import type { AuditEvent } from '../../memory/records';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { oneLine, requireScope } from './scope-option';

function field(value: AuditEvent['after'], key: string): unknown {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
}

/** A short description of an event: the memory's text when it has one, else its compact JSON. */
function describe(event: AuditEvent): string {
  const content = field(event.after, 'content') ?? field(event.before, 'content');
  if (typeof content === 'string') {
    const confidence = field(event.after, 'confidence');
    return `${oneLine(content, 120)}${typeof confidence === 'number' ? ` (${confidence.toFixed(2)})` : ''}`;
  }
  return event.after === null ? '' : oneLine(JSON.stringify(event.after), 120);
}

export const auditCommand: CommandRunner = {
  async run(ctx) {
    const limit = ctx.values.limit === undefined ? 50 : Number(ctx.values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new ValidationError('--limit must be a whole number from 1 to 10000', { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'audit');
    const events = await core.auditLog.latest(scope.id, limit);
    writeResult(
      ctx,
      {
        scope: scope.key,
        events: events.map((e) => ({
          id: e.id,
          at: e.createdAt.toISOString(),
          action: e.action,
          subjectType: e.subjectType,
          subjectId: e.subjectId,
          runId: e.runId,
          reason: e.reason,
          before: e.before,
          after: e.after,
        })),
      },
      events.length === 0
        ? `no audit events in ${scope.key}`
        : events
            .map((e) => {
              const what = describe(e);
              return `${e.createdAt.toISOString().replace('T', ' ').slice(0, 19)}  ${e.action.padEnd(10)} ${e.subjectType.padEnd(7)} ${(e.subjectId ?? '-').padEnd(36)}  ${what}${e.reason ? `${what ? '  ' : ''}— ${oneLine(e.reason, 100)}` : ''}`;
            })
            .join('\n'),
    );
    return 0;
  },
};
