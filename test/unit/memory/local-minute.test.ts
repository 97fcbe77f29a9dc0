/**
 * `formatLocalMinute` writes every time a reply's context shows (dozens per reply), so it keeps
 * one formatter per zone and reads UTC straight off the ISO form: both must write exactly what a
 * fresh `Intl.DateTimeFormat` writes, for any instant and zone, and fall back to UTC for a zone
 * Intl does not know.
 */
import { describe, expect, it } from '@jest/globals';
import { formatLocalMinute } from '../../../src/memory/digests/digest';
import { seededRandom } from '../../../src/shared/seeded-random';

/** What the formatter wrote before it kept formatters: a new Intl formatter per call. */
function fresh(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
}

const ZONES = ['UTC', 'Europe/Madrid', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham'];
/** 1950-2150: the instants a person's messages and schedules have. */
const FROM = Date.UTC(1950, 0, 1);
const TO = Date.UTC(2150, 0, 1);

describe('formatLocalMinute', () => {
  it('writes what a fresh Intl formatter writes, in every zone, for any instant', () => {
    const rand = seededRandom(11);
    for (let i = 0; i < 300; i++) {
      const date = new Date(FROM + Math.floor(rand() * (TO - FROM)));
      for (const zone of ZONES) expect(formatLocalMinute(date, zone)).toBe(fresh(date, zone));
      expect(formatLocalMinute(date, null)).toBe(fresh(date, 'UTC'));
    }
  });

  it('writes a zone it does not know in UTC, and still knows the zones after many unknown ones', () => {
    const date = new Date('2026-03-29T01:30:00Z');
    expect(formatLocalMinute(date, 'Mars/Olympus_Mons')).toBe('2026-03-29 01:30');
    for (let i = 0; i < 200; i++) formatLocalMinute(date, `Nowhere/Zone_${i}`);
    expect(formatLocalMinute(date, 'Europe/Madrid')).toBe('2026-03-29 03:30');
    expect(formatLocalMinute(date, 'UTC')).toBe('2026-03-29 01:30');
  });

  it('writes years before 1000 as Intl does', () => {
    const date = new Date(Date.UTC(999, 11, 31, 23, 59));
    expect(formatLocalMinute(date, 'UTC')).toBe(fresh(date, 'UTC'));
  });
});
