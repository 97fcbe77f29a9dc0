/**
 * `settings --scope S [--capped on|off|N] [--sleep-window HH:00-HH:00|default] [--sleep-budget
 * N|default] [--reply-budget N|default] [--json]`: prints a scope's capped mode, sleep window and
 * daily budgets, or changes them (the chat's `/settings`) through the domain's scope controls:
 * all the options given are checked before anything is written (exit 2 naming every bad one,
 * nothing changed), then applied in one audited change that a running service reads at its next
 * turn or tick.
 */
import { formatSleepWindow, parseSleepWindow, scopeControlsJson, type ScopeControlsChange, type ScopeControlsView } from '../../memory/scopes/scope-controls';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner, type CommandContext } from '../command';
import { requireScope } from './scope-option';

/** `N` as a whole number (checked for range by the scope controls), `default` as null. */
function countOption(ctx: CommandContext, name: string, problems: string[]): number | null | undefined {
  const raw = ctx.values[name];
  if (typeof raw !== 'string') return undefined;
  const value = raw.trim().toLowerCase();
  if (value === 'default') return null;
  if (!/^-?\d+$/.test(value)) {
    problems.push(`--${name} takes a whole number or default, not "${raw}"`);
    return undefined;
  }
  return Number(value);
}

/** The change the options ask for; a ValidationError (exit 2) listing every option it cannot read. */
function changeOf(ctx: CommandContext): ScopeControlsChange {
  const problems: string[] = [];
  const change: { -readonly [K in keyof ScopeControlsChange]: ScopeControlsChange[K] } = {};
  const capped = ctx.values.capped;
  if (typeof capped === 'string') {
    const value = capped.trim().toLowerCase();
    if (value === 'on') change.memoryCap = 'on';
    else if (value === 'off') change.memoryCap = null;
    else if (/^-?\d+$/.test(value)) change.memoryCap = Number(value);
    else problems.push(`--capped takes on, off or a number of memories to keep, not "${capped}"`);
  }
  const window = ctx.values['sleep-window'];
  if (typeof window === 'string') {
    if (window.trim().toLowerCase() === 'default') change.sleepWindow = null;
    else {
      try {
        change.sleepWindow = parseSleepWindow(window);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        problems.push(error.message);
      }
    }
  }
  const sleepBudget = countOption(ctx, 'sleep-budget', problems);
  if (sleepBudget !== undefined) change.sleepDailyTokenBudget = sleepBudget;
  const replyBudget = countOption(ctx, 'reply-budget', problems);
  if (replyBudget !== undefined) change.replyDailyBudget = replyBudget;
  if (problems.length > 0) throw new ValidationError(problems.join('; '), { code: 'cli.usage' });
  return change;
}

function settingsText(view: ScopeControlsView): string {
  const dflt = (isDefault: boolean) => (isDefault ? ' (default)' : '');
  const unlimited = (n: number, unit: string) => (n === 0 ? 'unlimited' : `${n} ${unit}`);
  const window = view.sleepWindow;
  return [
    `${view.scopeKey}:`,
    `  capped mode    ${view.memoryCap === null ? 'off' : `on, at most ${view.memoryCap} memories`}`,
    `  sleep window   ${window ? `${formatSleepWindow(window)} ${view.timeZone}${dflt(view.sleepWindowIsDefault)}, ${view.inSleepWindow ? 'open now' : `next opens ${view.nextSleepWindow?.toISOString()}`}` : 'any time'}`,
    `  sleep budget   ${unlimited(view.sleepDailyTokenBudget, 'tokens')} a day${dflt(view.sleepDailyTokenBudgetIsDefault)}`,
    `  reply budget   ${unlimited(view.replyDailyBudget, 'replies')} a day${dflt(view.replyDailyBudgetIsDefault)}`,
  ].join('\n');
}

export const settingsCommand: CommandRunner = {
  async run(ctx) {
    if (ctx.positionals.length > 0) throw new ValidationError(`settings takes options only, not "${ctx.positionals.join(' ')}"`, { code: 'cli.usage' });
    // Read before the store is opened: a typo is bad usage whichever scope it names.
    const change = changeOf(ctx);
    const { core, scope } = await requireScope(ctx, 'settings');
    const view =
      Object.keys(change).length === 0
        ? await core.scopeControls.get(scope.id)
        : await core.scopeControls.set(scope.id, change, { reason: 'changed from the command line' });
    writeResult(ctx, scopeControlsJson(view), settingsText(view));
    return 0;
  },
};
