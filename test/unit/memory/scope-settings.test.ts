import { describe, expect, it } from '@jest/globals';
import { resolveScopeSettings, ScopeSettingsError, type ScopeSettingsDefaults } from '../../../src/memory/scopes/scope-settings';

const defaults: ScopeSettingsDefaults = { digestTime: '21:00', dailyTokenBudget: 200_000, idleMinutes: 30, timeZone: 'UTC' };

function errorOf(settings: unknown, timezone: string | null = null): ScopeSettingsError {
  try {
    resolveScopeSettings({ key: 'telegram:private:42', settings, timezone }, defaults);
  } catch (error) {
    expect(error).toBeInstanceOf(ScopeSettingsError);
    return error as ScopeSettingsError;
  }
  throw new Error('expected the settings to be refused');
}

describe('resolveScopeSettings', () => {
  it('gives the service defaults when the scope stores nothing', () => {
    expect(resolveScopeSettings({ key: 'k', settings: null, timezone: null }, defaults)).toEqual({
      sleepWindow: undefined,
      digestTime: '21:00',
      dailyTokenBudget: 200_000,
      idleMinutes: 30,
      memoryCap: undefined,
      timeZone: 'UTC',
      digestEnabled: true,
    });
  });

  it('lays the stored settings and the scope time zone over the defaults', () => {
    const settings = resolveScopeSettings(
      {
        key: 'k',
        settings: { sleepWindow: { startHour: 23, durationHours: 8 }, digestTime: '08:30', dailyTokenBudget: 0, idleMinutes: 5, memoryCap: 500, digestEnabled: false, digestFrom: '2026-11-26T17:02:00.000Z' },
        timezone: 'Europe/Madrid',
      },
      defaults,
    );
    expect(settings).toEqual({
      sleepWindow: { startHour: 23, durationHours: 8 },
      digestTime: '08:30',
      dailyTokenBudget: 0,
      idleMinutes: 5,
      memoryCap: 500,
      timeZone: 'Europe/Madrid',
      digestEnabled: false,
      digestFrom: new Date('2026-11-26T17:02:00.000Z'),
    });
  });

  it('overrides field by field and ignores keys other components keep in the document', () => {
    const settings = resolveScopeSettings({ key: 'k', settings: { idleMinutes: 90, persona: { tone: 'warm' } }, timezone: null }, { ...defaults, memoryCap: 1000 });
    expect(settings.idleMinutes).toBe(90);
    expect(settings.digestTime).toBe('21:00');
    expect(settings.memoryCap).toBe(1000);
    expect(settings).not.toHaveProperty('persona');
  });

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
