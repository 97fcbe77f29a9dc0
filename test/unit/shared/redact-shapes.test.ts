/**
 * The shapes behind redaction (src/shared/redact.ts): the maintained rule set, the patterns it
 * lacks, the normalized reading, and what must stay readable. The whole corpus through the running
 * service is test/chaos/secret-leaks.test.ts.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { redactRequest } from '../../../src/llm/prompt-redaction';
import { clearRegisteredSecrets, redactSecrets, registerSecrets } from '../../../src/shared/redact';
import { SECRET_RULE_COUNT } from '../../../src/shared/secret-rules';
import { charactersShown, secretCorpus } from '../../support/secret-corpus';

afterEach(() => clearRegisteredSecrets());

const SEEDS = [1, 2, 3, 4, 5];

describe('credential shapes', () => {
  it('runs the preset rules (all but the comment directive and the file-based GCP rule)', () => {
    expect(SECRET_RULE_COUNT).toBeGreaterThanOrEqual(12);
  });

  it.each(SEEDS)('shows 0 characters of any corpus secret (seed %i)', (seed) => {
    const shown = secretCorpus(seed)
      .map((c) => ({ kind: c.kind, shown: charactersShown(c.needle, redactSecrets(c.pasted)) }))
      .filter((c) => c.shown > 0);
    expect(shown).toEqual([]);
  });

  it('a private key cut off before its END line goes to the end of the text', () => {
    const body = `MIIEow${'Zx9'.repeat(40)}`;
    expect(redactSecrets(`key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body}`)).toBe('key:\n[REDACTED]');
  });

  it('keeps the readable parts around a password: scheme, user, host; the setting name; the word Bearer', () => {
    expect(redactSecrets('postgresql://nocturne:hunter2secret@db:5432/x')).toBe('postgresql://nocturne:[REDACTED]@db:5432/x');
    expect(redactSecrets('mongodb://app:S3cr3t-Pw@mongo.example.com/db')).toBe('mongodb://app:[REDACTED]@mongo.example.com/db');
    expect(redactSecrets('DB_PASSWORD="pa55word!" next')).toBe('DB_PASSWORD="[REDACTED]" next');
    expect(redactSecrets('Authorization: Bearer abcdefghijklmnop')).toBe('Authorization: Bearer [REDACTED]');
  });

  it('the AWS secret key is redacted whole, not only the part the rule reports', () => {
    const key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKE'.replace('EXAMPLE', 'Q1w2E3r');
    const out = redactSecrets(`aws_secret_access_key = ${key.slice(0, 40)}`);
    expect(charactersShown(key.slice(0, 40), out)).toBe(0);
  });
});

describe('what stays readable', () => {
  it.each([
    'Can you ask-questions-about-everything tomorrow?',
    'the secret: always be kind',
    'Ben secret: the hiking trip is a surprise party',
    'inputTokens=500 outputTokens=120',
    '{"inputTokens":500,"durationMs":1234}',
    'see http://localhost:3000/docs and https://example.com/a/b?c=d',
    'password reset link sent; token expired',
    'the meeting is at 10:30 and the key is under the mat',
    'A task-list of 12 items',
  ])('%s', (text) => {
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('the normalized reading', () => {
  it('redacts a registered secret split by zero-width characters, with them', () => {
    registerSecrets(['adminTokenValue0123456789']);
    expect(redactSecrets('token adminToken\u200BValue\u2060012345\uFEFF6789!')).toBe('token [REDACTED]!');
  });

  it('redacts a registered secret written with percent escapes of any character', () => {
    registerSecrets(['plain-secret-value']);
    expect(redactSecrets('x=plain%2Dsecret%2dvalue&y=1')).toBe('x=[REDACTED]&y=1');
  });

  it('leaves a text with escapes but no secret as it was', () => {
    const text = 'https://example.com/search?q=caf%C3%A9%20au%20lait&x=%3D%3D and a\u200Bb';
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('prompts', () => {
  it('redacts the system prompt, every message and earlier tool-call arguments', () => {
    registerSecrets(['own-admin-token-123456']);
    const key = `sk-ant-api03-${'Q7x_zR2k9LmN'.repeat(8)}AA`;
    const request = redactRequest(
      {
        purpose: 'reply',
        system: `Known: ${key}`,
        messages: [
          { role: 'user', content: `token own-admin-token-123456` },
          { role: 'assistant', content: 'searching', toolCalls: [{ id: 't1', name: 'memory_search', arguments: { query: key, nested: [{ v: key }] } }] },
          { role: 'tool', toolCallId: 't1', name: 'memory_search', content: `found ${key}` },
        ],
      },
      redactSecrets,
    );
    const text = JSON.stringify(request);
    expect(text).not.toContain('own-admin-token-123456');
    expect(charactersShown(key, text)).toBe(0);
    expect(request.purpose).toBe('reply');
  });

  it('keeps the cached prefix of a system prompt pointing at the same place after a secret in it is replaced', () => {
    registerSecrets(['own-admin-token-123456']);
    const stable = 'You are kind.\n\nSoul: the token is own-admin-token-123456.';
    const request = redactRequest({ purpose: 'reply', system: `${stable}\n\nNow: 12:00.`, cachePrefixLength: stable.length, messages: [] }, redactSecrets);
    expect(request.system).not.toContain('own-admin-token-123456');
    expect(request.system!.slice(0, request.cachePrefixLength)).toBe(redactSecrets(stable));
    expect(request.system!.slice(request.cachePrefixLength)).toBe('\n\nNow: 12:00.');
  });
});
