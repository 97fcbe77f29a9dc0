import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../../src/config/load-config';
import { tempDir } from '../../support/databases';

const load = (env: Record<string, string>) => loadConfig({ env, envFile: false, cwd: tempDir() });

function problems(env: Record<string, string>): string[] {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).issues.map((issue) => `${issue.setting}: ${issue.problem}`);
  }
  throw new Error('expected the configuration to be refused');
}

describe('sleep settings', () => {
  it('default to a scheduler that looks hourly for scopes in their 02:00-06:00 window, decays at 03:30 and sends digests at 21:00', () => {
    expect(load({}).sleep).toEqual({
      enabled: true,
      consolidateCron: '0 * * * *',
      decayCron: '30 3 * * *',
      digestCheckCron: '* * * * *',
      idleMinutes: 30,
      minEpisodes: 10,
      maxWaitHours: 24,
      defaultSleepWindow: { startHour: 2, durationHours: 4 },
      maxAttempts: 5,
      dailyTokenBudget: 200_000,
      digestTime: '21:00',
      soulMaxTokens: 1_500,
    });
  });

  it('read every setting', () => {
    const sleep = load({
      SLEEP_ENABLED: 'false',
      SLEEP_CONSOLIDATE_CRON: '15 */2 * * *',
      SLEEP_DECAY_CRON: '0 4 * * SUN',
      SLEEP_IDLE_MINUTES: '0',
      SLEEP_MIN_EPISODES: '3',
      SLEEP_MAX_WAIT_HOURS: '24',
      SLEEP_MAX_ATTEMPTS: '2',
      SLEEP_DAILY_TOKEN_BUDGET: '0',
      DIGEST_TIME: '07:45',
    }).sleep;
    expect(sleep).toMatchObject({
      enabled: false,
      consolidateCron: '15 */2 * * *',
      decayCron: '0 4 * * SUN',
      idleMinutes: 0,
      minEpisodes: 3,
      maxWaitHours: 24,
      maxAttempts: 2,
      dailyTokenBudget: 0,
      digestTime: '07:45',
    });
    expect(load({ SLEEP_ENABLED: 'yes' }).sleep.enabled).toBe(true);
  });

  it('refuse bad cron expressions, times and numbers with what is allowed', () => {
    const found = problems({
      SLEEP_CONSOLIDATE_CRON: 'every six hours',
      SLEEP_DECAY_CRON: '61 3 * * *',
      DIGEST_TIME: '9pm',
      SLEEP_ENABLED: 'maybe',
      SLEEP_MIN_EPISODES: '0',
      SLEEP_DAILY_TOKEN_BUDGET: '-1',
    });
    expect(found).toHaveLength(6);
    expect(found.find((p) => p.startsWith('SLEEP_CONSOLIDATE_CRON'))).toMatch(
      /must be a cron expression such as "0 \*\/6 \* \* \*".*five, six, or seven.*\(got "every six hours"\)/,
    );
    expect(found.find((p) => p.startsWith('SLEEP_DECAY_CRON'))).toMatch(/Invalid value for minute: 61/);
    expect(found.find((p) => p.startsWith('DIGEST_TIME'))).toMatch(/HH:MM/);
    expect(found.find((p) => p.startsWith('SLEEP_ENABLED'))).toMatch(/true or false/);
    expect(found.find((p) => p.startsWith('SLEEP_MIN_EPISODES'))).toMatch(/>=\s*1|too small/i);
    expect(found.find((p) => p.startsWith('SLEEP_DAILY_TOKEN_BUDGET'))).toMatch(/>=\s*0|too small/i);
  });
});
