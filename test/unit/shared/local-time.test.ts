import { describe, expect, it } from '@jest/globals';
import { digestInstant, instantOf, isInSleepWindow, isValidTimeZone, localDateTime, parseClockTime, startOfLocalDay } from '../../../src/shared/local-time';

const at = (iso: string) => new Date(iso);

describe('isInSleepWindow', () => {
  const night = { startHour: 23, durationHours: 8 };

  it('wraps midnight: 23:00 for 8 hours is 23:00-07:00', () => {
    expect(isInSleepWindow(at('2024-05-01T22:59:00Z'), night, 'UTC')).toBe(false);
    expect(isInSleepWindow(at('2024-05-01T23:00:00Z'), night, 'UTC')).toBe(true);
    expect(isInSleepWindow(at('2024-05-02T00:00:00Z'), night, 'UTC')).toBe(true);
    expect(isInSleepWindow(at('2024-05-02T06:59:59Z'), night, 'UTC')).toBe(true);
    expect(isInSleepWindow(at('2024-05-02T07:00:00Z'), night, 'UTC')).toBe(false);
    expect(isInSleepWindow(at('2024-05-02T12:00:00Z'), night, 'UTC')).toBe(false);
  });

  it('reads the wall clock of the scope time zone, not UTC', () => {
    // 21:30 UTC is 23:30 in Madrid (CEST, +2) and 17:30 in New York (EDT, -4).
    expect(isInSleepWindow(at('2024-05-01T21:30:00Z'), night, 'Europe/Madrid')).toBe(true);
    expect(isInSleepWindow(at('2024-05-01T21:30:00Z'), night, 'America/New_York')).toBe(false);
    expect(isInSleepWindow(at('2024-05-02T04:30:00Z'), night, 'America/New_York')).toBe(true);
  });

  it('handles windows that do not wrap, and a 24-hour window is always open', () => {
    const afternoon = { startHour: 13, durationHours: 2 };
    expect(isInSleepWindow(at('2024-05-01T12:59:00Z'), afternoon, 'UTC')).toBe(false);
    expect(isInSleepWindow(at('2024-05-01T14:59:00Z'), afternoon, 'UTC')).toBe(true);
    expect(isInSleepWindow(at('2024-05-01T15:00:00Z'), afternoon, 'UTC')).toBe(false);
    for (const hour of [0, 5, 12, 23]) {
      expect(isInSleepWindow(at(`2024-05-01T${String(hour).padStart(2, '0')}:30:00Z`), { startHour: 7, durationHours: 24 }, 'Europe/Madrid')).toBe(true);
    }
  });

  it('follows the local clock across the spring-forward night in Europe/Madrid (02:00 CET -> 03:00 CEST)', () => {
    // 2024-03-31: clocks jump from 02:00 to 03:00 local at 01:00 UTC.
    const oneToThree = { startHour: 1, durationHours: 2 };
    expect(isInSleepWindow(at('2024-03-30T23:59:00Z'), oneToThree, 'Europe/Madrid')).toBe(false); // 00:59 CET
    expect(isInSleepWindow(at('2024-03-31T00:00:00Z'), oneToThree, 'Europe/Madrid')).toBe(true); // 01:00 CET
    expect(isInSleepWindow(at('2024-03-31T00:59:00Z'), oneToThree, 'Europe/Madrid')).toBe(true); // 01:59 CET
    expect(isInSleepWindow(at('2024-03-31T01:00:00Z'), oneToThree, 'Europe/Madrid')).toBe(false); // 03:00 CEST: the window was one real hour
    const night = { startHour: 23, durationHours: 8 };
    expect(isInSleepWindow(at('2024-03-30T22:00:00Z'), night, 'Europe/Madrid')).toBe(true); // 23:00 CET
    expect(isInSleepWindow(at('2024-03-31T04:59:00Z'), night, 'Europe/Madrid')).toBe(true); // 06:59 CEST
    expect(isInSleepWindow(at('2024-03-31T05:00:00Z'), night, 'Europe/Madrid')).toBe(false); // 07:00 CEST
  });

  it('keeps a window open through both occurrences of the repeated hour on the fall-back night', () => {
    // 2024-10-27: clocks go back from 03:00 CEST to 02:00 CET at 01:00 UTC; 02:xx happens twice.
    const twoToThree = { startHour: 2, durationHours: 1 };
    expect(isInSleepWindow(at('2024-10-26T23:59:00Z'), twoToThree, 'Europe/Madrid')).toBe(false); // 01:59 CEST
    expect(isInSleepWindow(at('2024-10-27T00:30:00Z'), twoToThree, 'Europe/Madrid')).toBe(true); // 02:30 CEST
    expect(isInSleepWindow(at('2024-10-27T01:30:00Z'), twoToThree, 'Europe/Madrid')).toBe(true); // 02:30 CET
    expect(isInSleepWindow(at('2024-10-27T02:00:00Z'), twoToThree, 'Europe/Madrid')).toBe(false); // 03:00 CET
  });
});

describe('digestInstant', () => {
  it("is today's local digest time as an instant", () => {
    expect(digestInstant(at('2024-05-01T12:00:00Z'), '21:00', 'Europe/Madrid')).toEqual(at('2024-05-01T19:00:00Z'));
    expect(digestInstant(at('2024-05-01T12:00:00Z'), '21:00', 'UTC')).toEqual(at('2024-05-01T21:00:00Z'));
    expect(digestInstant(at('2024-05-01T12:00:00Z'), '21:00', 'America/New_York')).toEqual(at('2024-05-02T01:00:00Z'));
  });

  it('uses the local date, which may differ from the UTC date', () => {
    // 22:30 UTC on May 1 is already 00:30 on May 2 in Madrid.
    expect(digestInstant(at('2024-05-01T22:30:00Z'), '21:00', 'Europe/Madrid')).toEqual(at('2024-05-02T19:00:00Z'));
    // 12:00 UTC is 00:45 the next day on the Chatham Islands (+12:45).
    expect(digestInstant(at('2024-05-01T12:00:00Z'), '09:15', 'Pacific/Chatham')).toEqual(at('2024-05-01T20:30:00Z'));
  });

  it('follows the offset change on the DST day in Europe/Madrid', () => {
    expect(digestInstant(at('2024-03-30T12:00:00Z'), '21:00', 'Europe/Madrid')).toEqual(at('2024-03-30T20:00:00Z')); // CET
    expect(digestInstant(at('2024-03-31T12:00:00Z'), '21:00', 'Europe/Madrid')).toEqual(at('2024-03-31T19:00:00Z')); // CEST
    expect(digestInstant(at('2024-10-27T12:00:00Z'), '21:00', 'Europe/Madrid')).toEqual(at('2024-10-27T20:00:00Z')); // CET again
  });

  it('moves a time skipped by the clocks past the gap, and takes the first of a repeated time', () => {
    expect(digestInstant(at('2024-03-31T12:00:00Z'), '02:30', 'Europe/Madrid')).toEqual(at('2024-03-31T01:30:00Z')); // 03:30 CEST
    expect(digestInstant(at('2024-10-27T12:00:00Z'), '02:30', 'Europe/Madrid')).toEqual(at('2024-10-27T00:30:00Z')); // 02:30 CEST
  });
});

describe('local time helpers', () => {
  it('startOfLocalDay is local midnight, or the first instant of a day that starts after a gap', () => {
    expect(startOfLocalDay(at('2024-03-31T12:00:00Z'), 'Europe/Madrid')).toEqual(at('2024-03-30T23:00:00Z'));
    expect(startOfLocalDay(at('2024-05-01T23:30:00Z'), 'Europe/Madrid')).toEqual(at('2024-05-01T22:00:00Z'));
    // Brazil's 2018 DST began at midnight: 00:00 did not exist, the day began at 01:00 (-02).
    expect(startOfLocalDay(at('2018-11-04T12:00:00Z'), 'America/Sao_Paulo')).toEqual(at('2018-11-04T03:00:00Z'));
  });

  it('localDateTime and instantOf are inverse on ordinary times', () => {
    const instant = at('2024-07-14T08:05:09Z');
    const local = localDateTime(instant, 'Asia/Kolkata');
    expect(local).toEqual({ year: 2024, month: 7, day: 14, hour: 13, minute: 35, second: 9 });
    expect(instantOf(local, 'Asia/Kolkata')).toEqual(instant);
    expect(localDateTime(at('2024-07-14T22:00:00Z'), 'Europe/Madrid').hour).toBe(0); // midnight is 0, never 24
  });

  it('parses HH:MM and knows IANA zones', () => {
    expect(parseClockTime('07:05')).toEqual({ hour: 7, minute: 5 });
    expect(() => parseClockTime('24:00')).toThrow(/HH:MM/);
    expect(() => parseClockTime('9:00')).toThrow(/HH:MM/);
    expect(isValidTimeZone('Europe/Madrid')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
  });
});
