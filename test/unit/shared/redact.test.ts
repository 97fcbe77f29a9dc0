import { afterEach, describe, expect, it } from '@jest/globals';
import { AppError } from '../../../src/shared/errors';
import { clearRegisteredSecrets, redactSecrets, redactValue, registerSecrets } from '../../../src/shared/redact';
import { memoryLogger } from '../../support/logger';

afterEach(() => clearRegisteredSecrets());

describe('redactSecrets', () => {
  it('removes credential-looking strings it was never told about', () => {
    const text = [
      'POST https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe failed',
      'key sk-ant-api03-abcdefghijklmnopqrstuvwx',
      'Authorization: Bearer abcdefghijklmnopqrstuvwxyz',
      'postgresql://nocturne:hunter2secret@db:5432/x',
    ].join('\n');
    const out = redactSecrets(text);
    expect(out).not.toMatch(/AAHdqTcv|abcdefghijklmnopqrstuvwx|hunter2secret/);
    expect(out).toContain('postgresql://nocturne:[REDACTED]@db:5432/x');
    expect(out).toContain('Bearer [REDACTED]');
  });

  it('removes registered secrets wherever they appear', () => {
    registerSecrets(['plain-admin-token-value', undefined, 'abc']);
    expect(redactSecrets('token=plain-admin-token-value;')).toBe('token=[REDACTED];');
    expect(redactSecrets('abc stays')).toBe('abc stays');
  });

  it('redacts nested values and secret-named keys', () => {
    const out = redactValue({ headers: { authorization: 'anything' }, list: ['sk-ant-abcdefghijklmnopqrstu'], n: 1 }) as Record<string, unknown>;
    expect(JSON.stringify(out)).not.toMatch(/anything|abcdefghijklmnop/);
    expect(out.n).toBe(1);
  });

  it('keeps secrets out of error messages', () => {
    registerSecrets(['my-secret-api-key-1']);
    const error = new AppError('request with my-secret-api-key-1 failed', { code: 'x', category: 'third_party', hint: 'check my-secret-api-key-1' });
    expect(error.message).toBe('request with [REDACTED] failed');
    expect(error.hint).toBe('check [REDACTED]');
  });
});

describe('logger', () => {
  it('writes JSON lines with the component and no secret, in messages, fields or errors', () => {
    registerSecrets(['123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw']);
    const { logger, lines } = memoryLogger();
    const child = logger.child({ component: 'telegram' });
    child.info('calling https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe', {
      url: 'x/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
      error: new Error('failed for 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw'),
      apiKey: 'whatever-value',
    });
    const all = lines().join('\n');
    expect(all).not.toMatch(/AAHdqTcv|whatever-value/);
    const entry = JSON.parse(lines()[0] as string) as Record<string, unknown>;
    expect(entry.component).toBe('telegram');
    expect(entry.level).toBe('info');
    expect((entry.error as { message: string }).message).toContain('[REDACTED]');
  });
});
