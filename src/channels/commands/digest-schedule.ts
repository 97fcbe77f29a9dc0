/**
 * `/digest at 21:30`, `/digest off`, `/digest on` and `/timezone [Zone]`: the person sets when
 * their evening digest comes and in which time zone, through the domain's digest schedule
 * (src/memory/scopes/digest-schedule.ts: validated, audited, read by the scheduler at its next
 * check, no restart). Bare `/digest` (the digest now) is in digest.ts.
 *
 * Evening digests go to a scope's owner (a private chat's person). A group has no owner, so in a
 * group these commands say so instead of saving a time nobody would get a digest at.
 */
import { formatLocalMinute } from '../../memory/digests/digest';
import type { DigestSchedule, DigestScheduleService } from '../../memory/scopes/digest-schedule';
import { ValidationError } from '../../shared/errors';
import type { CommandScope } from './command-scope';

/** The digest schedule verbs the commands use. */
export type ScheduleServices = Pick<DigestScheduleService, 'get' | 'set'>;

/** What `/digest <argument>` asks for. */
export type DigestRequest =
  | { readonly kind: 'now' }
  | { readonly kind: 'at'; readonly time: string }
  | { readonly kind: 'on' }
  | { readonly kind: 'off' }
  | { readonly kind: 'usage'; readonly argument: string };

/** How to use `/digest`, said after an argument it does not understand. */
export const DIGEST_USAGE =
  '/digest shows what I learned since the last digest, now. /digest at 21:30 sets the time of your evening digest (24-hour, in your time zone: /timezone), /digest off stops it and /digest on starts it again.';

/** Reads `/digest`'s argument: nothing, `at HH:MM` (or just `HH:MM`, `H:MM`), `on`, `off`. */
export function parseDigestArgument(argument: string): DigestRequest {
  const words = argument.trim().toLowerCase();
  if (words === '') return { kind: 'now' };
  if (words === 'on') return { kind: 'on' };
  if (words === 'off') return { kind: 'off' };
  const at = /^(?:at\s+)?(\d{1,2})[:.h](\d{2})$/.exec(words);
  if (at) {
    const hour = Number(at[1]);
    const minute = Number(at[2]);
    if (hour <= 23 && minute <= 59) return { kind: 'at', time: `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}` };
  }
  return { kind: 'usage', argument: argument.trim() };
}

function localTime(date: Date, timeZone: string): string {
  return formatLocalMinute(date, timeZone).slice(11);
}

/** "the next one on 2026-11-26 at 21:30" (in the schedule's zone). */
function nextText(schedule: DigestSchedule): string {
  if (!schedule.next) return '';
  const when = formatLocalMinute(schedule.next, schedule.timeZone);
  return ` The next one: ${when.slice(0, 10)} at ${when.slice(11)}.`;
}

/** One sentence on the schedule as it is. */
export function describeSchedule(schedule: DigestSchedule): string {
  if (!schedule.delivered) return GROUP_DIGEST_TEXT;
  if (!schedule.enabled) return 'Evening digests are off. /digest on starts them again; /digest still shows what I learned whenever you ask.';
  return `Your digest comes every day at ${schedule.time} (${schedule.timeZone}).${nextText(schedule)}`;
}

/** Said in a chat whose scope has no owner (a group). */
export const GROUP_DIGEST_TEXT = 'Evening digests go to private chats only: here, /digest shows what I learned in this group whenever you ask.';

/** `/digest at HH:MM`, `/digest on`, `/digest off`: changes the schedule; returns the answer. */
export async function changeDigestSchedule(
  schedule: ScheduleServices,
  scope: CommandScope,
  request: Exclude<DigestRequest, { kind: 'now' }>,
  where: string,
): Promise<string> {
  if (request.kind === 'usage') return `I did not understand “${request.argument}”. ${DIGEST_USAGE}`;
  const current = await schedule.get(scope.id);
  if (!current.delivered) return GROUP_DIGEST_TEXT;
  const reason = `the owner sent /digest ${request.kind === 'at' ? `at ${request.time}` : request.kind} in ${where}`;
  const change = request.kind === 'at' ? { time: request.time, enabled: true } : { enabled: request.kind === 'on' };
  const now = await schedule.set(scope.id, change, { reason });
  if (request.kind === 'off') return 'Done: no more evening digests. /digest still shows what I learned whenever you ask; /digest on starts them again.';
  return `Done: your digest will come every day at ${now.time} (${now.timeZone}).${nextText(now)}${now.timeZoneIsDefault ? ` If that is not your time zone, tell me with /timezone, e.g. /timezone Europe/Madrid.` : ''}`;
}

/** How to name a time zone. */
const ZONE_EXAMPLES = 'an IANA time zone name such as Europe/Madrid, America/New_York or Asia/Tokyo';

/** `/timezone` (show) and `/timezone Zone` (set, validated); returns the answer. */
export async function answerTimeZone(schedule: ScheduleServices, scope: CommandScope, argument: string, where: string): Promise<string> {
  const zone = argument.trim();
  if (zone === '') {
    const current = await schedule.get(scope.id);
    const whose = current.timeZoneIsDefault ? ' (the default: you have not set one)' : '';
    return `Your time zone is ${current.timeZone}${whose}; it is ${localTime(current.at, current.timeZone)} there now. To change it, send /timezone and ${ZONE_EXAMPLES}.`;
  }
  let now: DigestSchedule;
  try {
    now = await schedule.set(scope.id, { timeZone: zone }, { reason: `the owner sent /timezone in ${where}` });
  } catch (error) {
    if (error instanceof ValidationError) return `“${zone}” is not a time zone I know. Send /timezone and ${ZONE_EXAMPLES}.`;
    throw error;
  }
  const digest = now.delivered && now.enabled ? ` Your digest comes at ${now.time} there.${nextText(now)}` : '';
  return `Done: your time zone is now ${now.timeZone}; it is ${localTime(now.at, now.timeZone)} there. The dates I show you follow it.${digest}`;
}
