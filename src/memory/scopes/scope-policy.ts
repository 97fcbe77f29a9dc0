/**
 * One scope policy: every decision that depends on which scope is asking (its time zone, digest
 * time, sleep window, sleep token budget, daily reply budget, idle minutes, memory cap), plus the rules every site used to
 * write for itself (how many consolidation attempts an episode gets, which episodes are still
 * eligible for consolidation, how tokens are estimated), resolved in one place from the scope's
 * row and the service defaults.
 *
 * Resolve it once per turn or job from a row read for that turn or job, and hand the result
 * down: two parts of one reply (or one consolidation batch) then cannot disagree, and a setting
 * changed by `/timezone`, the admin API or the CLI is seen by the next turn without a restart.
 *
 * Stored values are written by people and may be wrong (an import, a hand edit). The policy never
 * throws on them: each invalid field falls back to the service default and is listed in
 * {@link ScopePolicy.problems}, so a reply still gets a sensible zone; the scheduler, which must
 * not run a scope on settings the person did not mean, asks for {@link requirePolicy} instead.
 */
import type { Config } from '../../config/load-config';
import { isValidTimeZone, type SleepWindow } from '../../shared/local-time';
import { estimateTokens } from '../../shared/tokens';
import {
  ScopeSettingsError,
  scopeSettingsSchema,
  type ScopeSettings,
  type ScopeSettingsDefaults,
  type ScopeSettingsSource,
  type StoredScopeSettings,
} from './scope-settings';

/** Failed consolidation attempts after which an episode is left alone (SLEEP_MAX_ATTEMPTS's default). */
export const DEFAULT_CONSOLIDATION_ATTEMPTS = 5;

/** The zone used when neither the scope nor the service names a valid one. */
export const FALLBACK_TIME_ZONE = 'UTC';

/** The service-wide defaults a scope's policy falls back to. */
export interface PolicyDefaults extends ScopeSettingsDefaults {
  /** SLEEP_MAX_ATTEMPTS. */
  readonly consolidationAttempts: number;
}

/** One invalid stored field and what is allowed there. */
export interface PolicyProblem {
  readonly field: string;
  readonly problem: string;
}

/** Everything a turn or a job decides by scope. */
export interface ScopePolicy extends ScopeSettings {
  /** Whether {@link ScopeSettings.timeZone} is the service default (the scope names none, or an invalid one). */
  readonly timeZoneIsDefault: boolean;
  /** Failed consolidation attempts after which an episode is given up on. */
  readonly consolidationAttempts: number;
  /** Stored fields that were invalid and fell back to the default (empty when all were valid). */
  readonly problems: readonly PolicyProblem[];
  /** The one token estimate (shared/tokens.ts): the larger of chars/4 and words*0.75. */
  readonly estimateTokens: (text: string) => number;
}

/** The zone of a scope: its own when it is a valid IANA zone, else the default, else UTC. */
export function scopeTimeZone(scope: { readonly timezone: string | null }, defaultTimeZone: string | undefined): string {
  if (scope.timezone !== null && isValidTimeZone(scope.timezone)) return scope.timezone;
  return defaultTimeZone !== undefined && isValidTimeZone(defaultTimeZone) ? defaultTimeZone : FALLBACK_TIME_ZONE;
}

/** The defaults of every scope, from the configuration. */
export function policyDefaults(config: Pick<Config, 'sleep' | 'timeZone'> & Partial<Pick<Config, 'agent'>>): PolicyDefaults {
  return {
    digestTime: config.sleep.digestTime,
    dailyTokenBudget: config.sleep.dailyTokenBudget,
    ...(config.agent && { replyDailyBudget: config.agent.replyDailyBudget }),
    idleMinutes: config.sleep.idleMinutes,
    timeZone: config.timeZone,
    sleepWindow: config.sleep.defaultSleepWindow,
    consolidationAttempts: config.sleep.maxAttempts,
  };
}

type StoredField = keyof StoredScopeSettings;

/** The stored document field by field: a valid field is kept even when a neighbour is not. */
function readStored(raw: unknown, problems: PolicyProblem[]): StoredScopeSettings {
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push({ field: 'settings', problem: 'must be a JSON object' });
    return {};
  }
  const document = raw as Record<string, unknown>;
  const stored: Record<string, unknown> = {};
  const fields = Object.entries(scopeSettingsSchema.shape) as Array<[StoredField, (typeof scopeSettingsSchema.shape)[StoredField]]>;
  for (const [field, schema] of fields) {
    if (document[field] === undefined) continue;
    const parsed = schema.safeParse(document[field]);
    if (parsed.success) {
      stored[field] = parsed.data;
      continue;
    }
    for (const issue of parsed.error.issues) {
      problems.push({ field: [field, ...issue.path.map(String)].join('.'), problem: issue.message });
    }
  }
  return stored as StoredScopeSettings;
}

/**
 * The policy of a scope: its stored settings over the defaults, its zone over the default zone;
 * an invalid stored field falls back to the default and is named in `problems`. Never throws.
 */
export function resolvePolicy(scope: ScopeSettingsSource, defaults: PolicyDefaults): ScopePolicy {
  const problems: PolicyProblem[] = [];
  const stored = readStored(scope.settings, problems);
  if (scope.timezone !== null && !isValidTimeZone(scope.timezone)) {
    problems.push({ field: 'timezone', problem: `"${scope.timezone}" is not an IANA time zone such as Europe/Madrid or UTC` });
  }
  const timeZone = scopeTimeZone(scope, defaults.timeZone);
  const sleepWindow: SleepWindow | undefined = stored.sleepWindow ?? defaults.sleepWindow;
  return {
    ...(sleepWindow && { sleepWindow }),
    digestTime: stored.digestTime ?? defaults.digestTime,
    dailyTokenBudget: stored.dailyTokenBudget ?? defaults.dailyTokenBudget,
    replyDailyBudget: stored.replyDailyBudget ?? defaults.replyDailyBudget ?? 0,
    idleMinutes: stored.idleMinutes ?? defaults.idleMinutes,
    memoryCap: stored.memoryCap ?? defaults.memoryCap,
    timeZone,
    timeZoneIsDefault: timeZone !== scope.timezone,
    digestEnabled: stored.digestEnabled ?? true,
    ...(stored.digestFrom ? { digestFrom: new Date(stored.digestFrom) } : {}),
    consolidationAttempts: defaults.consolidationAttempts,
    problems,
    estimateTokens,
  };
}

/** {@link resolvePolicy}, but a scope with any invalid stored field is a {@link ScopeSettingsError} naming them. */
export function requirePolicy(scope: ScopeSettingsSource, defaults: PolicyDefaults): ScopePolicy {
  const policy = resolvePolicy(scope, defaults);
  if (policy.problems.length > 0) throw new ScopeSettingsError(scope.key, policy.problems);
  return policy;
}

/** The episodes consolidation may still take: not consolidated, and tried fewer than `attempts` times. */
export function eligibleEpisodes(attempts: number): { consolidated: false; consolidationAttempts: { lt: number } } {
  return { consolidated: false, consolidationAttempts: { lt: attempts } };
}

/** The episodes consolidation gave up on: not consolidated after `attempts` tries or more. */
export function exhaustedEpisodes(attempts: number): { consolidated: false; consolidationAttempts: { gte: number } } {
  return { consolidated: false, consolidationAttempts: { gte: attempts } };
}
