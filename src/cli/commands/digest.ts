/**
 * `digest --scope S [--json]`: builds the digest of everything since the previous one, up to
 * now, and prints it. It is stored like a scheduled one (so it will be sent, and the next period
 * starts now); asking again in the same instant returns the same digest.
 *
 * `digest --scope S --at HH:MM | --off | --on`: sets the scope's evening digest instead (the
 * chat's `/digest at 21:30`, `/digest off`, `/digest on`), through the domain's digest schedule:
 * validated, audited, read by a running service's scheduler at its next minute.
 * `digest --scope S --schedule` prints the schedule without changing it.
 */
import { digestItems } from '../../memory/digests/digest';
import type { DigestSchedule } from '../../memory/scopes/digest-schedule';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner, type CommandContext } from '../command';
import { requireScope } from './scope-option';

/** The schedule as the CLI prints it with --json. */
export function scheduleJson(s: DigestSchedule) {
  return {
    scope: s.scopeKey,
    digestTime: s.time,
    digestEnabled: s.enabled,
    timezone: s.timeZone,
    timezoneIsDefault: s.timeZoneIsDefault,
    nextDigest: s.next?.toISOString() ?? null,
    digestDelivered: s.delivered,
  };
}

/** One line: `telegram:private:42: digest every day at 21:30 (Europe/Madrid), next 2026-11-26T20:30:00.000Z`. */
export function scheduleText(s: DigestSchedule): string {
  if (!s.enabled) return `${s.scopeKey}: evening digest off (time ${s.time}, ${s.timeZone})`;
  const reach = s.delivered ? '' : ' (the scope has no owner: nobody is sent it)';
  return `${s.scopeKey}: digest every day at ${s.time} (${s.timeZone}${s.timeZoneIsDefault ? ', the default zone' : ''}), next ${s.next?.toISOString()}${reach}`;
}

async function setSchedule(ctx: CommandContext): Promise<number> {
  const at = ctx.values.at as string | undefined;
  const on = ctx.values.on === true;
  const off = ctx.values.off === true;
  if ([at !== undefined, on, off].filter(Boolean).length > 1) throw new ValidationError('digest takes one of --at HH:MM, --off, --on', { code: 'cli.usage' });
  const { core, scope } = await requireScope(ctx, 'digest');
  const schedule =
    at === undefined && !on && !off
      ? await core.digestSchedule.get(scope.id)
      : await core.digestSchedule.set(scope.id, at !== undefined ? { time: at, enabled: true } : { enabled: on }, { reason: 'changed from the command line' });
  writeResult(ctx, scheduleJson(schedule), scheduleText(schedule));
  return 0;
}

export const digestCommand: CommandRunner = {
  async run(ctx) {
    if (ctx.values.at !== undefined || ctx.values.on || ctx.values.off || ctx.values.schedule) return setSchedule(ctx);
    const { core, scope } = await requireScope(ctx, 'digest');
    const now = new Date();
    const digest = await core.digestBook.build(scope.id, { periodEnd: now, now });
    writeResult(
      ctx,
      {
        scope: scope.key,
        id: digest.id,
        status: digest.status,
        periodStart: digest.periodStart.toISOString(),
        periodEnd: digest.periodEnd.toISOString(),
        items: digestItems(digest),
        content: digest.content,
      },
      digest.status === 'empty' ? `nothing new in ${scope.key} since ${digest.periodStart.toISOString()}` : digest.content,
    );
    return 0;
  },
};
