/**
 * How a sleep window is written and read by every door (`/settings sleep`, `--sleep-window`,
 * `sleepWindow` in the admin API): whole hours, across midnight, all day; and what is refused.
 */
import { describe, expect, it } from '@jest/globals';
import { checkControlsChange, formatSleepWindow, parseSleepWindow } from '../../../src/memory/scopes/scope-controls';

describe('sleep windows as people write them', () => {
  it.each([
    ['02:00-06:00', { startHour: 2, durationHours: 4 }, '02:00-06:00'],
    ['2-6', { startHour: 2, durationHours: 4 }, '02:00-06:00'],
    ['23:00-07:00', { startHour: 23, durationHours: 8 }, '23:00-07:00'],
    ['22 to 2', { startHour: 22, durationHours: 4 }, '22:00-02:00'],
    ['00:00-24:00', { startHour: 0, durationHours: 24 }, '00:00-24:00'],
    ['13:00-00:00', { startHour: 13, durationHours: 11 }, '13:00-00:00'],
    ['10:00-24:00', { startHour: 10, durationHours: 14 }, '10:00-00:00'],
  ])('%s', (text, window, shown) => {
    expect(parseSleepWindow(text)).toEqual(window);
    expect(formatSleepWindow(window)).toBe(shown);
    expect(parseSleepWindow(formatSleepWindow(window))).toEqual(window);
  });

  it('shows any 24-hour window as all day', () => {
    expect(formatSleepWindow({ startHour: 5, durationHours: 24 })).toBe('00:00-24:00');
  });

  it.each([
    ['02:30-05:00', 'does not start and end on the hour'],
    ['05:00-05:00', 'is empty'],
    ['24:00-03:00', 'names an hour past 24:00'],
    ['3-25', 'names an hour past 24:00'],
    ['night', 'is not a window'],
    ['', 'is not a window'],
  ])('refuses %j', (text, why) => {
    expect(() => parseSleepWindow(text)).toThrow(why);
  });

  it('checks every field of a change and names each bad one', () => {
    expect(() =>
      checkControlsChange({ memoryCap: 0, replyDailyBudget: -1, sleepDailyTokenBudget: 1.5, sleepWindow: { startHour: 24, durationHours: 0 } }),
    ).toThrow(/memory cap: 0 .*; sleep window: .*; sleep budget: 1.5 .*; reply budget: -1 /);
    expect(() => checkControlsChange({ memoryCap: 'on', replyDailyBudget: 0, sleepDailyTokenBudget: null, sleepWindow: null })).not.toThrow();
  });
});
