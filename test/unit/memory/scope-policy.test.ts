/**
 * The scope policy: defaults when a scope stores nothing, the scope's values over them, and an
 * invalid stored value falling back to the default (named in `problems`) or refused outright by
 * `requirePolicy`, the scheduler's door.
 */
import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../../src/config/load-config';
import {
  DEFAULT_CONSOLIDATION_ATTEMPTS,
  eligibleEpisodes,
  exhaustedEpisodes,
  policyDefaults,
  requirePolicy,
  resolvePolicy,
  scopeTimeZone,
  type PolicyDefaults,
} from '../../../src/memory/scopes/scope-policy';
import { ScopeSettingsError } from '../../../src/memory/scopes/scope-settings';
import { estimateTokens } from '../../../src/shared/tokens';

const defaults: PolicyDefaults = { digestTime: '21:00', dailyTokenBudget: 200_000, idleMinutes: 30, timeZone: 'UTC', consolidationAttempts: 5 };

function errorOf(settings: unknown, timezone: string | null = null): ScopeSettingsError {
  try {
    requirePolicy({ key: 'telegram:private:42', settings, timezone }, defaults);
  } catch (error) {
    expect(error).toBeInstanceOf(ScopeSettingsError);
    return error as ScopeSettingsError;
  }
  throw new Error('expected the settings to be refused');
}

describe('resolvePolicy', () => {
  it('gives the service defaults when the scope stores nothing', () => {
    const policy = resolvePolicy({ key: 'k', settings: null, timezone: null }, defaults);
    expect(policy).toMatchObject({
      digestTime: '21:00',
      dailyTokenBudget: 200_000,
      idleMinutes: 30,
      timeZone: 'UTC',
      timeZoneIsDefault: true,
      digestEnabled: true,
      consolidationAttempts: 5,
      problems: [],
    });
    expect(policy.sleepWindow).toBeUndefined();
    expect(policy.memoryCap).toBeUndefined();
    expect(policy.digestFrom).toBeUndefined();
    expect(policy.estimateTokens).toBe(estimateTokens);
  });

  it('takes its defaults from the configuration', () => {
    const config = loadConfig({ env: { DATA_DIR: '/tmp/nocturne-policy', TZ: 'Asia/Tokyo', DIGEST_TIME: '07:15', SLEEP_MAX_ATTEMPTS: '3' }, envFile: false });
    const policy = resolvePolicy({ key: 'k', settings: {}, timezone: null }, policyDefaults(config));
    expect(policy).toMatchObject({ timeZone: 'Asia/Tokyo', digestTime: '07:15', consolidationAttempts: 3, sleepWindow: config.sleep.defaultSleepWindow });
  });

  it('lays the stored settings and the scope time zone over the defaults', () => {
    const policy = requirePolicy(
      {
        key: 'k',
        settings: {
          sleepWindow: { startHour: 23, durationHours: 8 },
          digestTime: '08:30',
          dailyTokenBudget: 0,
          idleMinutes: 5,
          memoryCap: 500,
          digestEnabled: false,
          digestFrom: '2026-11-26T17:02:00.000Z',
        },
        timezone: 'Europe/Madrid',
      },
      defaults,
    );
    expect(policy).toMatchObject({
      sleepWindow: { startHour: 23, durationHours: 8 },
      digestTime: '08:30',
      dailyTokenBudget: 0,
      idleMinutes: 5,
      memoryCap: 500,
      timeZone: 'Europe/Madrid',
      timeZoneIsDefault: false,
      digestEnabled: false,
      digestFrom: new Date('2026-11-26T17:02:00.000Z'),
    });
  });

  it('overrides field by field and ignores keys other components keep in the document', () => {
    const policy = resolvePolicy(
      { key: 'k', settings: { idleMinutes: 90, persona: { tone: 'warm' }, groupReplies: 'mentions' }, timezone: null },
      { ...defaults, memoryCap: 1000 },
    );
    expect(policy.idleMinutes).toBe(90);
    expect(policy.digestTime).toBe('21:00');
    expect(policy.memoryCap).toBe(1000);
    expect(policy.problems).toEqual([]);
    expect(policy).not.toHaveProperty('persona');
  });

  it('falls back to the default for each invalid stored field, keeps the valid ones, and names the bad ones', () => {
    const policy = resolvePolicy(
      { key: 'k', settings: { digestTime: '9pm', idleMinutes: 12, memoryCap: 0 }, timezone: 'Mars/Olympus' },
      { ...defaults, timeZone: 'Europe/Lisbon' },
    );
    expect(policy).toMatchObject({ digestTime: '21:00', idleMinutes: 12, memoryCap: undefined, timeZone: 'Europe/Lisbon', timeZoneIsDefault: true });
    expect(policy.problems.map((p) => p.field).sort()).toEqual(['digestTime', 'memoryCap', 'timezone']);
  });

  it('falls back to UTC when the default zone is not one either, and never throws on a document that is not an object', () => {
    expect(scopeTimeZone({ timezone: null }, 'Nowhere/Special')).toBe('UTC');
    expect(scopeTimeZone({ timezone: null }, undefined)).toBe('UTC');
    expect(scopeTimeZone({ timezone: 'Asia/Kolkata' }, 'Nowhere/Special')).toBe('Asia/Kolkata');
    const policy = resolvePolicy({ key: 'k', settings: ['idleMinutes', 5], timezone: null }, defaults);
    expect(policy.problems).toEqual([{ field: 'settings', problem: 'must be a JSON object' }]);
    expect(policy.idleMinutes).toBe(30);
  });
});

describe('requirePolicy', () => {
  it('refuses bad values, naming the scope key and every bad field', () => {
    const error = errorOf({ sleepWindow: { startHour: 24, durationHours: 0 }, digestTime: '9pm', dailyTokenBudget: -1, idleMinutes: 2.5, memoryCap: 0 });
    expect(error.code).toBe('scope.settings_invalid');
    expect(error.scopeKey).toBe('telegram:private:42');
    expect(error.problems.map((p) => p.field).sort()).toEqual(
      ['dailyTokenBudget', 'digestTime', 'idleMinutes', 'memoryCap', 'sleepWindow.durationHours', 'sleepWindow.startHour'].sort(),
    );
    expect(error.message).toContain('Scope "telegram:private:42" has invalid sleep settings');
    expect(error.message).toMatch(/digestTime: must be a time of day as HH:MM/);
    expect(error.message).toMatch(/sleepWindow\.startHour: .*23/);
  });

  it('refuses a window without its hours, a document that is not an object, and an unknown time zone', () => {
    expect(errorOf({ sleepWindow: { startHour: 22 } }).problems.map((p) => p.field)).toEqual(['sleepWindow.durationHours']);
    expect(errorOf(['idleMinutes', 5]).problems).toEqual([{ field: 'settings', problem: 'must be a JSON object' }]);
    expect(errorOf('{"idleMinutes":5}').problems[0]?.field).toBe('settings');
    const zone = errorOf({}, 'Mars/Olympus');
    expect(zone.problems).toEqual([{ field: 'timezone', problem: expect.stringContaining('"Mars/Olympus" is not an IANA time zone') }]);
  });
});

describe('the consolidation rules', () => {
  it('says which episodes are still eligible and which were given up on, by the one attempt count', () => {
    expect(DEFAULT_CONSOLIDATION_ATTEMPTS).toBe(5);
    expect(eligibleEpisodes(5)).toEqual({ consolidated: false, consolidationAttempts: { lt: 5 } });
    expect(exhaustedEpisodes(5)).toEqual({ consolidated: false, consolidationAttempts: { gte: 5 } });
  });
});
