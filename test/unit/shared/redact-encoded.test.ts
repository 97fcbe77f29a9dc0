/** Encoded forms of secrets and log pseudonyms (issue 16, item 8). */
import { afterEach, describe, expect, it } from '@jest/globals';
import { clearRegisteredSecrets, pseudonym, pseudonymizeField, redactSecrets, registerSecrets, setLogPseudonymKey } from '../../../src/shared/redact';

afterEach(() => {
  clearRegisteredSecrets();
  setLogPseudonymKey(undefined);
});

describe('encoded secrets', () => {
  const secret = 'my-Custom/secret+value=42!';
  it.each([0, 1, 2, 5])('redacts a configured secret in base64 after %i other bytes, and URL-encoded', (offset) => {
    registerSecrets([secret]);
    const b64 = Buffer.from(`${'x'.repeat(offset)}${secret}`).toString('base64');
    expect(redactSecrets(`auth ${b64} end`)).toContain('[REDACTED]');
    expect(redactSecrets(`auth ${Buffer.from(`u:${secret}`).toString('base64url')} end`)).toContain('[REDACTED]');
    expect(redactSecrets(`https://x/${encodeURIComponent(secret)}/y`)).not.toContain(encodeURIComponent(secret));
  });
  it('recognises token shapes URL-encoded or in base64 without being told about them', () => {
    const token = '123456789:AAHxYzAbCdEfGhIjKlMnOpQrStUvWxYz012';
    expect(redactSecrets(`/bot${encodeURIComponent(token)}/getMe`)).toBe('/bot[REDACTED]/getMe');
    expect(redactSecrets(`k=${Buffer.from(`key: sk-ant-api03-abcdefghijklmnop0123`).toString('base64')}`)).toBe('k=[REDACTED]');
  });
  it('leaves ordinary text and ordinary base64 alone', () => {
    const text = 'order 1234567 shipped; ref QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=';
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('log pseudonyms', () => {
  it('are off without a key, keyed and stable with one', () => {
    expect(pseudonymizeField('userId', 42)).toBe(42);
    setLogPseudonymKey('passphrase-one-0000');
    const a = pseudonym(42);
    expect(a).toMatch(/^id#[0-9a-f]{12}$/);
    expect(pseudonymizeField('chatId', 42)).toBe(a);
    expect(pseudonymizeField('message', 'failed for telegram:private:42 today')).toBe(`failed for ${pseudonym('telegram:private:42')} today`);
    expect(pseudonymizeField('details', { scopeKey: 'telegram:private:42', n: 3 })).toEqual({ scopeKey: pseudonym('telegram:private:42'), n: 3 });
    setLogPseudonymKey('passphrase-two-0000');
    expect(pseudonym(42)).not.toBe(a);
  });
});
