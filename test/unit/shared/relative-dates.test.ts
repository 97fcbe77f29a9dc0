import { describe, expect, it } from '@jest/globals';
import { localDay, resolveRelativeDates, latestStatedDate } from '../../../src/shared/relative-dates';

// Thursday 2026-03-05, 23:30 in Lisbon (UTC+0); already Friday 2026-03-06 in Tokyo.
const at = new Date('2026-03-05T23:30:00Z');
const lisbon = (text: string) => resolveRelativeDates(text, { at, timeZone: 'Europe/Lisbon' });

describe('relative dates resolved against the message\u2019s local day', () => {
  it.each([
    ['The user has a dentist appointment tomorrow', 'The user has a dentist appointment on 2026-03-06'],
    ['The user has a dentist appointment on tomorrow', 'The user has a dentist appointment on 2026-03-06'],
    ['The user flies to Porto the day after tomorrow', 'The user flies to Porto on 2026-03-07'],
    ['The user had a job interview yesterday', 'The user had a job interview on 2026-03-04'],
    ['The user meets Lena next Friday', 'The user meets Lena on 2026-03-06'],
    ['The user meets Lena on Thursday', 'The user meets Lena on 2026-03-12'],
    ['The user visits the museum this Thursday', 'The user visits the museum on 2026-03-05'],
    ['The user ran a half marathon last Sunday', 'The user ran a half marathon on 2026-03-01'],
    ['The user moves house in two weeks', 'The user moves house on 2026-03-19'],
    ['The user starts a new job in 3 months', 'The user starts a new job on 2026-06-05'],
    ['The user adopted a cat 10 days ago', 'The user adopted a cat on 2026-02-23'],
    ['The user has a concert tonight', 'The user has a concert on 2026-03-05'],
    ['The user prefers tea', 'The user prefers tea'],
    ['The user wants to travel more next week', 'The user wants to travel more next week'],
  ])('%s', (text, expected) => {
    expect(lisbon(text)).toBe(expected);
  });

  it('uses the scope\u2019s time zone: the same instant is already Friday in Tokyo', () => {
    expect(localDay(at, 'Asia/Tokyo').toISOString().slice(0, 10)).toBe('2026-03-06');
    expect(resolveRelativeDates('The user has a call tomorrow', { at, timeZone: 'Asia/Tokyo' })).toBe('The user has a call on 2026-03-07');
    expect(resolveRelativeDates('The user has a call tomorrow', { at, timeZone: 'Not/AZone' })).toBe('The user has a call on 2026-03-06');
  });

  it('reads the date a text states', () => {
    expect(latestStatedDate('The user meets Lena on 2026-03-06')?.toISOString()).toBe('2026-03-06T00:00:00.000Z');
    expect(latestStatedDate('The user is in Madeira from 2026-03-06 to 2026-03-10')?.toISOString()).toBe('2026-03-10T00:00:00.000Z');
    expect(latestStatedDate('The user prefers tea')).toBeUndefined();
  });
});
