/**
 * The settings a person can reach besides the digest schedule: capped mode (seed 001: at most N
 * memories, one written per ended conversation), the sleep window (when consolidation may run)
 * and the two daily budgets (sleep's model tokens, and replies). Chat commands (`/settings`), the
 * CLI (`settings`) and the admin API (`PATCH /scopes/:id/settings`) all change them here, so every
 * door validates with the same words and audits the same way (`AuditEvent` action `settings`
 * on the scope, the fields before and after, like the digest schedule).
 *
 * They live in the `Scope.settings` document (other keys in it are kept). Nothing caches them:
 * the scope policy (`scope-policy.ts`) is resolved from the row at every turn and job, so the
 * next reply, scheduler tick or conversation end follows a change without a restart.
 */
import { NotFoundError, ValidationError } from '../../shared/errors';
import { isInSleepWindow, nextWindowOpening, type SleepWindow } from '../../shared/local-time';
import type { Prisma, PrismaClient, Scope } from '../../storage/prisma';
import { requirePolicy, type PolicyDefaults } from './scope-policy';
import { requireReadableSettings, settingsAuditEvent } from './settings-write';

/** The cap `capped on` gives a scope that has none: seed 001 keeps ten memories per app. */
export const SEED_MEMORY_CAP = 10;
/** Largest memory cap accepted: past it capped mode would not cap anything a person could read. */
export const MAX_MEMORY_CAP = 100_000;
/** Largest sleep budget accepted (SLEEP_DAILY_TOKEN_BUDGET's own range). */
export const MAX_SLEEP_TOKEN_BUDGET = 1_000_000_000;
/** Largest reply budget accepted (REPLY_DAILY_BUDGET's own range). */
export const MAX_REPLY_BUDGET = 1_000_000;

const HOURS_PER_DAY = 24;

/** What a person sees of these settings. */
export interface ScopeControlsView {
  readonly scopeId: string;
  readonly scopeKey: string;
  /** Capped mode's cap; null when capped mode is off (memories are consolidated, not capped). */
  readonly memoryCap: number | null;
  /** When consolidation may run; null: at any time (neither the scope nor the service sets a window). */
  readonly sleepWindow: SleepWindow | null;
  /** Whether the window is the service's (SLEEP_WINDOW_START / SLEEP_WINDOW_HOURS). */
  readonly sleepWindowIsDefault: boolean;
  /** Whether the window is open now. */
  readonly inSleepWindow: boolean;
  /** When the window next opens (now when it is always open); null without a window. */
  readonly nextSleepWindow: Date | null;
  /** Sleep's model tokens per local day; 0 = unlimited. */
  readonly sleepDailyTokenBudget: number;
  readonly sleepDailyTokenBudgetIsDefault: boolean;
  /** Replies per local day; 0 = unlimited. */
  readonly replyDailyBudget: number;
  readonly replyDailyBudgetIsDefault: boolean;
  /** The zone the window and the budgets' days are read in. */
  readonly timeZone: string;
  /** When this was read (the service's clock). */
  readonly at: Date;
}

/** A change; absent fields stay as they are, null returns a field to the service default. */
export interface ScopeControlsChange {
  /** A cap turns capped mode on; `on` keeps the current cap or gives {@link SEED_MEMORY_CAP}; null turns it off. */
  readonly memoryCap?: number | 'on' | null;
  readonly sleepWindow?: SleepWindow | null;
  readonly sleepDailyTokenBudget?: number | null;
  readonly replyDailyBudget?: number | null;
}

/** Who asked, for the audit event's reason. */
export interface ControlsOrigin {
  readonly reason?: string;
}

export interface ScopeControls {
  /** The settings of a scope (NotFoundError for an unknown one). */
  get(scopeId: string): Promise<ScopeControlsView>;
  /**
   * Validates a change (ValidationError listing every bad field; nothing written), applies it,
   * audits the fields that changed, and returns the settings as they are now.
   */
  set(scopeId: string, change: ScopeControlsChange, origin?: ControlsOrigin): Promise<ScopeControlsView>;
}

/** `02:00-06:00` for a window. */
export function formatSleepWindow(window: SleepWindow): string {
  const end = window.startHour + window.durationHours;
  const clock = (hour: number) => `${String(hour).padStart(2, '0')}:00`;
  // A 24-hour window is open all day whatever its start; any other window ending at midnight ends at 00:00.
  if (window.durationHours >= HOURS_PER_DAY) return `${clock(0)}-${clock(HOURS_PER_DAY)}`;
  return `${clock(window.startHour)}-${clock(end % HOURS_PER_DAY)}`;
}

/** How a window is written, for error messages. */
export const SLEEP_WINDOW_FORMAT = 'a span of whole hours as HH:00-HH:00 in your time zone, e.g. 02:00-06:00 or 23:00-07:00 (00:00-24:00: all day)';

/**
 * Reads `02:00-06:00` (also `2-6`, `23:00-07:00` across midnight, `00:00-24:00` for all day).
 * The stored window is whole hours, so minutes other than :00 are refused rather than rounded.
 */
export function parseSleepWindow(text: string): SleepWindow {
  const match = /^\s*(\d{1,2})(?::(\d{2}))?\s*(?:-|–|to)\s*(\d{1,2})(?::(\d{2}))?\s*$/i.exec(text);
  const refuse = (why: string) =>
    new ValidationError(`sleep window: "${text.trim()}" ${why}; write ${SLEEP_WINDOW_FORMAT}`, {
      code: 'scope.settings_invalid',
      details: { field: 'sleepWindow' },
    });
  if (!match) throw refuse('is not a window');
  const [, startText, startMinutes, endText, endMinutes] = match;
  if ((startMinutes ?? '00') !== '00' || (endMinutes ?? '00') !== '00') throw refuse('does not start and end on the hour');
  const start = Number(startText);
  const end = Number(endText);
  if (start > HOURS_PER_DAY - 1 || end > HOURS_PER_DAY) throw refuse('names an hour past 24:00');
  if (start === end % HOURS_PER_DAY && !(start === 0 && end === HOURS_PER_DAY)) throw refuse('is empty (it ends when it starts)');
  const duration = end === HOURS_PER_DAY && start === 0 ? HOURS_PER_DAY : (end - start + HOURS_PER_DAY) % HOURS_PER_DAY;
  return { startHour: start, durationHours: duration };
}

function whole(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/**
 * Checks a change without touching the store: a door that changes other settings in the same
 * request (the admin API's digest fields) calls it first, so a bad field leaves everything as it was.
 */
export function checkControlsChange(change: ScopeControlsChange): void {
  const problems: string[] = [];
  const { memoryCap, sleepWindow, sleepDailyTokenBudget, replyDailyBudget } = change;
  if (memoryCap !== undefined && memoryCap !== null && memoryCap !== 'on' && !whole(memoryCap, 1, MAX_MEMORY_CAP))
    problems.push(`memory cap: ${String(memoryCap)} is not a whole number from 1 to ${MAX_MEMORY_CAP}`);
  if (sleepWindow && (!whole(sleepWindow.startHour, 0, HOURS_PER_DAY - 1) || !whole(sleepWindow.durationHours, 1, HOURS_PER_DAY)))
    problems.push(`sleep window: must be ${SLEEP_WINDOW_FORMAT}`);
  if (sleepDailyTokenBudget !== undefined && sleepDailyTokenBudget !== null && !whole(sleepDailyTokenBudget, 0, MAX_SLEEP_TOKEN_BUDGET))
    problems.push(`sleep budget: ${String(sleepDailyTokenBudget)} is not a whole number of tokens from 0 (unlimited) to ${MAX_SLEEP_TOKEN_BUDGET}`);
  if (replyDailyBudget !== undefined && replyDailyBudget !== null && !whole(replyDailyBudget, 0, MAX_REPLY_BUDGET))
    problems.push(`reply budget: ${String(replyDailyBudget)} is not a whole number of replies from 0 (unlimited) to ${MAX_REPLY_BUDGET}`);
  if (problems.length > 0) throw new ValidationError(problems.join('; '), { code: 'scope.settings_invalid', details: { problems } });
}

function settingsObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
}

/** The stored key of each change field (the sleep budget keeps its older name, `dailyTokenBudget`). */
const STORED_KEYS = {
  memoryCap: 'memoryCap',
  sleepWindow: 'sleepWindow',
  sleepDailyTokenBudget: 'dailyTokenBudget',
  replyDailyBudget: 'replyDailyBudget',
} as const satisfies Record<keyof ScopeControlsChange, string>;

export function createScopeControls(prisma: PrismaClient, defaults: PolicyDefaults, clock: () => Date = () => new Date()): ScopeControls {
  function describe(scope: Scope, now: Date): ScopeControlsView {
    const stored = settingsObject(scope.settings);
    const policy = requirePolicy(scope, defaults);
    const window = policy.sleepWindow ?? null;
    return {
      scopeId: scope.id,
      scopeKey: scope.key,
      memoryCap: policy.memoryCap ?? null,
      sleepWindow: window,
      sleepWindowIsDefault: stored.sleepWindow === undefined,
      inSleepWindow: window === null || isInSleepWindow(now, window, policy.timeZone),
      nextSleepWindow: window === null ? null : nextOpening(now, window, policy.timeZone),
      sleepDailyTokenBudget: policy.dailyTokenBudget,
      sleepDailyTokenBudgetIsDefault: stored.dailyTokenBudget === undefined,
      replyDailyBudget: policy.replyDailyBudget,
      replyDailyBudgetIsDefault: stored.replyDailyBudget === undefined,
      timeZone: policy.timeZone,
      at: now,
    };
  }

  async function load(scopeId: string): Promise<Scope> {
    const scope = await prisma.scope.findUnique({ where: { id: scopeId } });
    if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
    return scope;
  }

  return {
    async get(scopeId) {
      return describe(await load(scopeId), clock());
    },

    async set(scopeId, change, origin = {}) {
      checkControlsChange(change);
      const now = clock();
      await prisma.$transaction(async (tx) => {
        const scope = await tx.scope.findUnique({ where: { id: scopeId } });
        if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
        const settings = settingsObject(scope.settings);
        const before: Record<string, unknown> = {};
        const after: Record<string, unknown> = {};
        for (const field of Object.keys(STORED_KEYS) as Array<keyof ScopeControlsChange>) {
          let wanted = change[field];
          if (wanted === undefined) continue;
          const key = STORED_KEYS[field];
          if (wanted === 'on') wanted = typeof settings.memoryCap === 'number' ? settings.memoryCap : SEED_MEMORY_CAP;
          const current = settings[key] ?? null;
          if (JSON.stringify(current) === JSON.stringify(wanted)) continue;
          before[key] = current;
          after[key] = wanted;
          if (wanted === null) delete settings[key];
          else settings[key] = wanted;
        }
        if (Object.keys(after).length === 0) return;
        // The stored document must stay readable by the scheduler: check it before writing.
        requireReadableSettings(settings);
        await tx.scope.update({ where: { id: scopeId }, data: { settings: settings as Prisma.InputJsonObject } });
        await tx.auditEvent.create({ data: settingsAuditEvent(scopeId, { before, after }, origin.reason ?? null, now) });
      });
      return describe(await load(scopeId), now);
    },
  };
}

/**
 * The window's next opening: while it is open, the one after this night's (an answer that does not
 * move with the second it is asked, so two reads of the settings agree); now for a window that
 * never closes.
 */
function nextOpening(now: Date, window: SleepWindow, timeZone: string): Date {
  if (window.durationHours >= HOURS_PER_DAY) return now;
  return nextWindowOpening(now, window, timeZone);
}

/** The settings as the CLI's --json and the admin API write them (a window as `02:00-06:00`). */
export function scopeControlsJson(view: ScopeControlsView) {
  return {
    scope: view.scopeKey,
    cappedMode: view.memoryCap !== null,
    memoryCap: view.memoryCap,
    sleepWindow: view.sleepWindow ? formatSleepWindow(view.sleepWindow) : null,
    sleepWindowIsDefault: view.sleepWindowIsDefault,
    inSleepWindow: view.inSleepWindow,
    nextSleepWindow: view.nextSleepWindow?.toISOString() ?? null,
    sleepDailyTokenBudget: view.sleepDailyTokenBudget,
    sleepDailyTokenBudgetIsDefault: view.sleepDailyTokenBudgetIsDefault,
    replyDailyBudget: view.replyDailyBudget,
    replyDailyBudgetIsDefault: view.replyDailyBudgetIsDefault,
    timezone: view.timeZone,
  };
}
