/**
 * `/settings`: shows a scope's capped mode, sleep window and daily budgets, and changes one:
 * `/settings capped on|off|N`, `/settings sleep 02:00-06:00|default`, `/settings budget sleep
 * N|default`, `/settings budget replies N|default`. Through the domain's scope controls
 * (src/memory/scopes/scope-controls.ts: validated, audited, read by the next turn or tick), like
 * `/timezone` goes through the digest schedule. A bad value changes nothing and says why.
 *
 * Who may change them is the channel's decision (in a Telegram group, its administrators); the
 * wording is here, written once for every channel.
 */
import { formatLocalMinute } from '../../memory/digests/digest';
import { formatSleepWindow, parseSleepWindow, type ScopeControls, type ScopeControlsChange, type ScopeControlsView } from '../../memory/scopes/scope-controls';
import { ValidationError } from '../../shared/errors';
import type { CommandScope } from './command-scope';

/** The scope controls' verbs the command uses. */
export type SettingsServices = Pick<ScopeControls, 'get' | 'set'>;

/** What `/settings <argument>` asks for. */
export type SettingsRequest =
  | { readonly kind: 'show' }
  | { readonly kind: 'change'; readonly change: ScopeControlsChange; readonly said: string }
  | { readonly kind: 'usage'; readonly problem: string };

/** How to change a setting, said after anything `/settings` does not understand. */
export const SETTINGS_USAGE =
  'Change one with /settings capped on|off|N, /settings sleep 02:00-06:00|default, /settings budget sleep N|default (model tokens a day for sorting memories) or /settings budget replies N|default (replies a day); 0 means unlimited.';

/** Said in a group to a member who is not one of its administrators. */
export const SETTINGS_NOT_ADMIN_TEXT = 'Only the group’s administrators can change its settings. /settings shows them.';

/** A count as typed: digits, optionally grouped (50,000 or 50_000), optionally negative (then refused by the check). */
function readCount(word: string | undefined): number | 'default' | undefined {
  if (word === undefined) return undefined;
  if (word === 'default') return 'default';
  if (!/^-?\d{1,3}(?:[,_]?\d{3})*$|^-?\d+$/.test(word)) return undefined;
  return Number(word.replace(/[,_]/g, ''));
}

/** Reads `/settings`'s argument. */
export function parseSettingsArgument(argument: string): SettingsRequest {
  const said = argument.trim().replace(/\s+/g, ' ');
  const words = said
    .toLowerCase()
    .split(' ')
    .filter((w) => w !== '');
  const [key, ...rest] = words;
  if (key === undefined) return { kind: 'show' };
  const change = (c: ScopeControlsChange): SettingsRequest => ({ kind: 'change', change: c, said });
  switch (key) {
    case 'capped': {
      const value = rest.join(' ');
      if (value === 'on') return change({ memoryCap: 'on' });
      if (value === 'off') return change({ memoryCap: null });
      const cap = readCount(value);
      if (typeof cap === 'number') return change({ memoryCap: cap });
      return { kind: 'usage', problem: `capped takes on, off or a number of memories to keep, not “${value}”.` };
    }
    case 'sleep': {
      const value = rest.join(' ');
      if (value === 'default') return change({ sleepWindow: null });
      if (value === '') return { kind: 'usage', problem: 'sleep takes a window such as 02:00-06:00, or default.' };
      try {
        return change({ sleepWindow: parseSleepWindow(value) });
      } catch (error) {
        if (error instanceof ValidationError) return { kind: 'usage', problem: `${error.message}.` };
        throw error;
      }
    }
    case 'budget': {
      const [which, amount, ...extra] = rest;
      const count = extra.length === 0 ? readCount(amount) : undefined;
      const field = which === 'sleep' ? 'sleepDailyTokenBudget' : which === 'replies' || which === 'reply' ? 'replyDailyBudget' : undefined;
      if (!field) return { kind: 'usage', problem: `budget takes sleep or replies, not “${which ?? ''}”.` };
      if (count === undefined) return { kind: 'usage', problem: `the ${which} budget takes a whole number or default, not “${[amount, ...extra].join(' ')}”.` };
      return change({ [field]: count === 'default' ? null : count });
    }
    default:
      return { kind: 'usage', problem: `I do not know the setting “${key}”.` };
  }
}

function count(n: number, unit: string): string {
  return n === 0 ? `unlimited ${unit}` : `${n.toLocaleString('en-US')} ${unit}`;
}

/** The settings as a short block of lines. */
export function describeSettings(view: ScopeControlsView): string {
  const dflt = (isDefault: boolean) => (isDefault ? ' (the default)' : '');
  const window = view.sleepWindow;
  const next =
    !window || window.durationHours >= 24
      ? ''
      : view.inSleepWindow
        ? ' It is open now.'
        : ` It next opens ${formatLocalMinute(view.nextSleepWindow!, view.timeZone).replace(' ', ' at ')}.`;
  return [
    `Settings of ${view.scopeKey}:`,
    `• Capped memory: ${view.memoryCap === null ? 'off — I sort our conversations into memories while I sleep' : `on — I keep at most ${view.memoryCap} memories, one per conversation`}`,
    `• Sleep window: ${window ? `${formatSleepWindow(window)} ${view.timeZone}${view.sleepWindowIsDefault ? ', the default' : ''}.${next}` : 'any time (no window is set)'}`,
    `• Sleep budget: ${count(view.sleepDailyTokenBudget, 'model tokens')} a day${dflt(view.sleepDailyTokenBudgetIsDefault)}`,
    `• Reply budget: ${count(view.replyDailyBudget, 'replies')} a day${dflt(view.replyDailyBudgetIsDefault)}`,
  ].join('\n');
}

/** `/settings` (show) or `/settings <key> <value>` (change); returns the answer. */
export async function answerSettings(settings: SettingsServices, scope: CommandScope, request: SettingsRequest, where: string): Promise<string> {
  if (request.kind === 'show') return `${describeSettings(await settings.get(scope.id))}\n\n${SETTINGS_USAGE}`;
  if (request.kind === 'usage') return `Nothing changed: ${request.problem} ${SETTINGS_USAGE}`;
  let now: ScopeControlsView;
  try {
    now = await settings.set(scope.id, request.change, { reason: `/settings ${request.said} sent in ${where}` });
  } catch (error) {
    if (error instanceof ValidationError) return `Nothing changed: ${error.message}. ${SETTINGS_USAGE}`;
    throw error;
  }
  return `Done.\n${describeSettings(now)}`;
}
