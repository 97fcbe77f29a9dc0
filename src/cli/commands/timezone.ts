/**
 * `timezone --scope S [ZONE]`: prints a scope's time zone, or sets it (the chat's `/timezone
 * Europe/Madrid`): checked against the IANA database (exit 2 for an unknown zone, nothing
 * written), audited, used for the digest time, dates and prompts from the next tick on.
 */
import { writeResult, type CommandRunner } from '../command';
import { scheduleJson } from './digest';
import { requireScope } from './scope-option';

export const timezoneCommand: CommandRunner = {
  async run(ctx) {
    const zone = ctx.positionals[0];
    const { core, scope } = await requireScope(ctx, 'timezone');
    const schedule =
      zone === undefined
        ? await core.digestSchedule.get(scope.id)
        : await core.digestSchedule.set(scope.id, { timeZone: zone }, { reason: 'changed from the command line' });
    const text = `${schedule.scopeKey}: time zone ${schedule.timeZone}${schedule.timeZoneIsDefault ? ' (the default: TZ)' : ''}${schedule.enabled && schedule.next ? `; next digest ${schedule.next.toISOString()} (${schedule.time} local)` : ''}`;
    writeResult(ctx, scheduleJson(schedule), text);
    return 0;
  },
};
