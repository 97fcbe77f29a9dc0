/**
 * Per-scope sleep settings: the `Scope.settings` JSON document, its schema and the error that
 * names a bad field. They are laid over the service defaults by the scope policy
 * (`scope-policy.ts`), the one place that decides anything by scope.
 *
 * Settings are written by people (an admin command, a chat command), so a bad document must not
 * take the scheduler down: parsing throws a {@link ScopeSettingsError} naming the scope and the
 * field, and the scheduler logs it and leaves that scope alone. Keys this module does not know
 * are kept out of the result but not refused, so other components can store their own settings
 * in the same document.
 */
import { z } from 'zod';
import { ValidationError } from '../../shared/errors';
import type { SleepWindow } from '../../shared/local-time';

/** The schema of the sleep part of `Scope.settings`; every field is optional. */
export const scopeSettingsSchema = z.object({
  sleepWindow: z
    .object({
      startHour: z.number().int().min(0).max(23),
      durationHours: z.number().int().min(1).max(24),
    })
    .optional(),
  digestTime: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM, 24-hour, e.g. 21:00')
    .optional(),
  /** Model tokens per local day for sleep work (SLEEP_DAILY_TOKEN_BUDGET); 0 = unlimited. */
  dailyTokenBudget: z.number().int().min(0).optional(),
  /** Replies per local day (REPLY_DAILY_BUDGET); 0 = unlimited. */
  replyDailyBudget: z.number().int().min(0).optional(),
  idleMinutes: z.number().int().min(0).optional(),
  memoryCap: z.number().int().min(1).optional(),
  /** false: no scheduled digest (`/digest off`); `/digest` on demand still works. */
  digestEnabled: z.boolean().optional(),
  /**
   * When the digest time or the time zone last changed (ISO): a digest time that had already
   * passed that day is not due until its next occurrence (`/digest at 21:30` said at 22:00 means
   * tomorrow, not an immediate digest of a period that ended before the change).
   */
  digestFrom: z
    .string()
    .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO date-time')
    .optional(),
});

/** What a scope may override, as stored. */
export type StoredScopeSettings = z.infer<typeof scopeSettingsSchema>;

/** The service-wide defaults (from the configuration) that a scope's settings override. */
export interface ScopeSettingsDefaults {
  readonly digestTime: string;
  /** 0 means unlimited. */
  readonly dailyTokenBudget: number;
  /**
   * REPLY_DAILY_BUDGET; 0 means unlimited. Optional because only a reply reads it: the scheduler
   * and the digest schedule resolve their part of the policy without it (then 0).
   */
  readonly replyDailyBudget?: number;
  readonly idleMinutes: number;
  readonly timeZone: string;
  /** Absent means no cap. */
  readonly memoryCap?: number;
  /** The nightly window of scopes that set none; absent: such scopes may be consolidated at any time. */
  readonly sleepWindow?: SleepWindow;
}

/** A scope's effective sleep settings. */
export interface ScopeSettings {
  /** The scope's own window, else the service's; absent: consolidated at any time of day (once idle). */
  readonly sleepWindow?: SleepWindow;
  /** HH:MM in {@link ScopeSettings.timeZone}. */
  readonly digestTime: string;
  /** Sleep's model tokens per local day; 0 means unlimited. */
  readonly dailyTokenBudget: number;
  /** Replies per local day; 0 means unlimited. */
  readonly replyDailyBudget: number;
  readonly idleMinutes: number;
  readonly memoryCap?: number;
  /** IANA zone: Scope.timezone, or the service default. */
  readonly timeZone: string;
  /** Whether the scheduled digest is sent (default true). */
  readonly digestEnabled: boolean;
  /** Digest instants before this are not due (the time or zone changed after them). */
  readonly digestFrom?: Date;
}

/** The fields of a Scope row this module reads. */
export interface ScopeSettingsSource {
  readonly key: string;
  readonly settings: unknown;
  readonly timezone: string | null;
}

/** A scope's stored settings (or time zone) are invalid; names the scope key and the field. */
export class ScopeSettingsError extends ValidationError {
  /** The scope's key, e.g. `telegram:private:123`. */
  readonly scopeKey: string;
  /** Each bad field (dotted path) with what is allowed. */
  readonly problems: readonly { readonly field: string; readonly problem: string }[];

  constructor(scopeKey: string, problems: readonly { field: string; problem: string }[]) {
    super(`Scope "${scopeKey}" has invalid sleep settings: ${problems.map((p) => `${p.field}: ${p.problem}`).join('; ')}`, {
      code: 'scope.settings_invalid',
      hint: 'Correct or remove these fields in the scope settings; until then the scope is not scheduled for sleep work.',
      details: { scopeKey, fields: problems.map((p) => p.field) },
    });
    this.name = 'ScopeSettingsError';
    this.scopeKey = scopeKey;
    this.problems = problems;
  }
}
