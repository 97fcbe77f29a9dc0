/** The one rule for scope keys: what it refuses, and the one normalization it applies. */
import { describe, expect, it } from '@jest/globals';
import { normalizeScopeKey, scopeKeyProblem, SCOPE_KEY_MAX_LENGTH } from '../../../../src/memory/scopes/scope-key';

describe('scope keys', () => {
  it.each([
    ['..', /only of dots/],
    ['.', /only of dots/],
    ['...', /only of dots/],
    ['', /empty/],
    [' ana', /space/],
    ['ana\u00a0', /space/],
    ['\ud800', /well-formed/],
    ['webhook:crm:\udc00', /well-formed/],
    ['ana\u200bbel', /invisible/],
    ['ana\u0000', /control/],
    ['ana\u0085bel', /control/],
    ['ana\u2028bel', /invisible/],
    ['x'.repeat(SCOPE_KEY_MAX_LENGTH + 1), /at most 200/],
  ])('refuses %j', (key, reason) => {
    expect(scopeKeyProblem(key)).toMatch(reason);
    expect(() => normalizeScopeKey(key)).toThrow(/is not a valid scope key/);
  });

  it.each(['telegram:private:42', 'webhook:crm:ana@example.com', 'kim:lee', 'a/../b', 'terminal:..', 'x'.repeat(SCOPE_KEY_MAX_LENGTH), 'Mercè'])(
    'accepts %j',
    (key) => {
      expect(scopeKeyProblem(key)).toBeNull();
    },
  );

  it('normalizes to NFC, so one name typed two ways is one scope', () => {
    expect(normalizeScopeKey('webhook:crm:Merce\u0300')).toBe('webhook:crm:Merc\u00e8');
    expect(normalizeScopeKey('webhook:crm:Merc\u00e8')).toBe('webhook:crm:Merc\u00e8');
  });

  it('names the code the caller asked for, and never quotes more than 50 characters of the key', () => {
    const long = `${'secret'.repeat(20)} `;
    let caught: unknown;
    try {
      normalizeScopeKey(long, 'import.invalid_key');
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'import.invalid_key' });
    expect((caught as Error).message).not.toContain('secret'.repeat(10));
  });
});
