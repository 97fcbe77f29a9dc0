/**
 * The pure parts of the digest schedule: reading `/digest`'s argument, canonical time zones, and
 * the next digest instant across a clock change.
 */
import { describe, expect, it } from '@jest/globals';
import { parseDigestArgument } from '../../../src/channels/commands/digest-schedule';
import { canonicalTimeZone, nextDigestInstant } from '../../../src/memory/scopes/digest-schedule';

describe('digest schedule', () => {
  it('reads /digest, /digest at HH:MM, on and off, and nothing else', () => {
    expect(parseDigestArgument('')).toEqual({ kind: 'now' });
    expect(parseDigestArgument(' at 21:30 ')).toEqual({ kind: 'at', time: '21:30' });
    expect(parseDigestArgument('7:05')).toEqual({ kind: 'at', time: '07:05' });
    expect(parseDigestArgument('AT 21.30')).toEqual({ kind: 'at', time: '21:30' });
    expect(parseDigestArgument('Off')).toEqual({ kind: 'off' });
    expect(parseDigestArgument('on')).toEqual({ kind: 'on' });
    expect(parseDigestArgument('at 24:00')).toEqual({ kind: 'usage', argument: 'at 24:00' });
    expect(parseDigestArgument('tomorrow')).toEqual({ kind: 'usage', argument: 'tomorrow' });
  });

  it('knows IANA zones in any case and refuses the rest', () => {
    expect(canonicalTimeZone('europe/madrid')).toBe('Europe/Madrid');
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('Mars/Olympus')).toBeNull();
    expect(canonicalTimeZone('')).toBeNull();
  });

  it('gives today’s instant while it is ahead, else tomorrow’s, on the wall clock across a clock change', () => {
    // Madrid leaves summer time on 2026-10-25 at 03:00.
    expect(nextDigestInstant(new Date('2026-10-24T18:00:00Z'), '21:30', 'Europe/Madrid')).toEqual(new Date('2026-10-24T19:30:00Z'));
    expect(nextDigestInstant(new Date('2026-10-24T20:00:00Z'), '21:30', 'Europe/Madrid')).toEqual(new Date('2026-10-25T20:30:00Z'));
  });
});
