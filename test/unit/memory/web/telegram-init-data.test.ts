/**
 * The Mini App init data check against Telegram's documented algorithm (test/support/init-data.ts
 * signs as Telegram does), with the clock given: the bot's own signature passes; a changed field,
 * another bot's token, an old or future `auth_date`, a repeated field and a missing user do not.
 */
import { describe, expect, it } from '@jest/globals';
import { initDataHash, validateInitData } from '../../../../src/memory/web/telegram-init-data';
import { initDataFields, signInitData } from '../../../support/init-data';

const TOKEN = '123456789:AAFakeTokenForTestsOnly_abcdefghijklmn';
const OTHER_TOKEN = '987654321:AAAnotherBotsTokenForTests_zyxwvutsrq';
const NOW = new Date('2026-11-28T00:00:00Z');
const nowSeconds = NOW.getTime() / 1000;
const ANA = { id: 4242, first_name: 'Ana' };
const check = (raw: string, maxAgeSeconds = 86_400) => validateInitData(raw, { botToken: TOKEN, maxAgeSeconds, now: NOW });

describe('Telegram Mini App init data', () => {
  it('accepts the data Telegram signed with the bot token, and reads the user and start parameter', () => {
    const raw = signInitData(initDataFields(ANA, nowSeconds - 60, 'g-100777'), TOKEN);
    expect(check(raw)).toEqual({ ok: true, user: { id: 4242, firstName: 'Ana' }, startParam: 'g-100777', authDate: new Date((nowSeconds - 60) * 1000) });
  });

  it('computes the hash exactly as the documentation does (fields in any order)', () => {
    const fields = initDataFields(ANA, nowSeconds);
    const documented = new URLSearchParams(signInitData(fields, TOKEN)).get('hash');
    expect(initDataHash(Object.entries(fields).reverse(), TOKEN)).toBe(documented);
  });

  it('refuses a changed field, another bot’s signature and a missing hash', () => {
    const raw = signInitData(initDataFields(ANA, nowSeconds), TOKEN);
    const forged = raw.replace(encodeURIComponent('"id":4242'), encodeURIComponent('"id":5151'));
    expect(forged).not.toBe(raw);
    expect(check(forged)).toEqual({ ok: false, reason: 'bad-hash' });
    expect(check(signInitData(initDataFields(ANA, nowSeconds), OTHER_TOKEN))).toEqual({ ok: false, reason: 'bad-hash' });
    expect(check(new URLSearchParams(initDataFields(ANA, nowSeconds)).toString())).toEqual({ ok: false, reason: 'malformed' });
    expect(check('')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses data older than the configured age, or from the future beyond clock skew', () => {
    expect(check(signInitData(initDataFields(ANA, nowSeconds - 3_601), TOKEN), 3_600)).toEqual({ ok: false, reason: 'expired' });
    expect(check(signInitData(initDataFields(ANA, nowSeconds - 3_599), TOKEN), 3_600).ok).toBe(true);
    expect(check(signInitData(initDataFields(ANA, nowSeconds + 3_600), TOKEN))).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses a repeated field and data without a user', () => {
    const raw = signInitData(initDataFields(ANA, nowSeconds), TOKEN);
    expect(check(`${raw}&auth_date=${nowSeconds}`)).toEqual({ ok: false, reason: 'malformed' });
    const { user: _user, ...withoutUser } = initDataFields(ANA, nowSeconds);
    expect(check(signInitData(withoutUser, TOKEN))).toEqual({ ok: false, reason: 'no-user' });
  });
});
