import { describe, expect, it } from '@jest/globals';
import { estimateImportance } from '../../../src/memory/episodes/importance';
import { normalizeEpisode, normalizeText } from '../../../src/memory/episodes/normalize';
import { ValidationError } from '../../../src/shared/errors';

const options = { maxBytes: 1024, defaultChannel: 'import', now: new Date('2024-01-01T00:00:00Z') };

function refusal(input: unknown, opts = options): ValidationError {
  try {
    normalizeEpisode(input, opts);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a refusal');
}

describe('normalizeText', () => {
  it('composes to NFC, drops control characters, keeps newlines and tabs, folds CRLF', () => {
    expect(normalizeText('  cafe\u0301\u0000\u0007 ok\r\nnext\tcol\u200B ')).toBe('caf\u00e9 ok\nnext\tcol\u200B');
  });
  it('replaces lone surrogates instead of storing broken UTF-16', () => {
    expect(normalizeText('a\uD800b')).toBe('a\uFFFDb');
  });
  it('keeps emoji and right-to-left text as they are', () => {
    expect(normalizeText('👩‍👩‍👧 שלום مرحبا')).toBe('👩‍👩‍👧 שלום مرحبا');
  });
});

describe('normalizeEpisode', () => {
  it('fills defaults and hashes the normalized content', () => {
    const episode = normalizeEpisode({ content: 'Hello there' }, options);
    expect(episode).toMatchObject({
      channel: 'import',
      role: 'user',
      author: null,
      timestamp: options.now,
      externalId: null,
      conversationId: null,
      metadata: null,
    });
    expect(episode.contentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(normalizeEpisode({ content: ' Hello there\u0000' }, options).contentHash).toBe(episode.contentHash);
  });

  it('maps assistant to agent, and keeps metadata tags lower-cased', () => {
    const episode = normalizeEpisode(
      {
        content: 'x',
        role: 'assistant',
        externalId: '42',
        timestamp: '2024-05-08T13:56:00+02:00',
        metadata: { topics: ['Hiking', 'hiking '], entities: ['Alice'], importance: 0.9, custom: 1 },
      },
      options,
    );
    expect(episode.role).toBe('agent');
    expect(episode.externalId).toBe('42');
    expect(episode.timestamp.toISOString()).toBe('2024-05-08T11:56:00.000Z');
    expect(episode.topics).toEqual(['hiking']);
    expect(episode.entities).toEqual(['alice']);
    expect(episode.importance).toBe(0.9);
    expect(episode.metadata).toMatchObject({ custom: 1 });
  });

  it('cleans the channel and every key and string of the metadata like the content (NUL, control characters, lone surrogates)', () => {
    const episode = normalizeEpisode(
      {
        content: 'x',
        channel: 'tele\u0000gram\u0007',
        metadata: { note: 'a\u0000b\uD800c\u0007', 'k\u0000ey': ['\u0001v', { deep: 'cafe\u0301\r\nok' }], topics: ['t\u0000ea'] },
      },
      options,
    );
    expect(episode.channel).toBe('telegram');
    expect(episode.metadata).toEqual({ note: 'ab\uFFFDc', key: ['v', { deep: 'caf\u00e9\nok' }], topics: ['tea'] });
    expect(episode.topics).toEqual(['tea']);
    expect(refusal({ content: 'x', channel: '\u0000\u0001' }).message).toMatch(/channel is empty/);
  });

  it('refuses empty content, also when only control characters and spaces remain', () => {
    expect(refusal({ content: '' }).code).toBe('episode.empty');
    expect(refusal({ content: ' \u0000\u0001 \n ' }).code).toBe('episode.empty');
  });

  it('refuses content over the cap with the size, the limit and the setting name', () => {
    const error = refusal({ content: 'é'.repeat(600) });
    expect(error.code).toBe('episode.too_large');
    expect(error.message).toMatch(/1\.2 KiB.*1\.0 KiB.*EPISODE_MAX_BYTES/);
  });

  it('refuses a huge message without scanning it', () => {
    expect(refusal({ content: 'x'.repeat(10 * 1024 * 1024) }).code).toBe('episode.too_large');
  });

  it('refuses a numeric externalId (12345 and "12345" would name one message)', () => {
    expect(refusal({ content: 'x', externalId: 12345 }).message).toBe(
      'externalId must be a string (write "12345"): a number would be confused with the string of the same digits',
    );
  });

  it('with checkTime, refuses timestamps more than 5 minutes ahead or before 1970', () => {
    const checked = { ...options, checkTime: true };
    expect(refusal({ content: 'x', timestamp: '9999-12-31' }, checked).message).toMatch(/^timestamp 9999-12-31 is in the future \(more than 5 minutes ahead/);
    expect(refusal({ content: 'x', timestamp: '1969-12-31T23:59:59Z' }, checked).message).toMatch(/^timestamp 1969-12-31T23:59:59Z is before 1970-01-01/);
    expect(refusal({ content: 'x', timestamp: '2024-01-01T00:06:00Z' }, checked).code).toBe('episode.bad_timestamp');
    expect(normalizeEpisode({ content: 'x', timestamp: '2024-01-01T00:04:00Z' }, checked).timestamp.toISOString()).toBe('2024-01-01T00:04:00.000Z');
    // Without it (the agent's and simulations' own clocks), the time is kept.
    expect(normalizeEpisode({ content: 'x', timestamp: '2030-01-01T00:00:00Z' }, options).timestamp.toISOString()).toBe('2030-01-01T00:00:00.000Z');
  });

  it('refuses metadata nested more than 64 levels before walking it', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    expect(refusal({ content: 'x', metadata: deep }).message).toBe('metadata is nested more than 64 levels deep');
    let ok: unknown = 1;
    for (let i = 0; i < 64; i++) ok = { a: ok };
    expect(normalizeEpisode({ content: 'x', metadata: ok }, options).metadata).toEqual(ok);
  });

  it('explains every field that is wrong', () => {
    const error = refusal({ content: 5, role: 'robot', timestamp: 'yesterday' });
    expect(error.message).toMatch(/content/);
    expect(error.message).toMatch(/role/);
    expect(error.message).toMatch(/timestamp must be an ISO 8601/);
    expect(refusal('just text').code).toBe('episode.not_object');
    expect(refusal([1, 2]).code).toBe('episode.not_object');
  });
});

describe('estimateImportance', () => {
  it('ranks self-disclosure with dates above small talk, and agent turns lower', () => {
    const disclosure = estimateImportance("My sister Anna's wedding is on 3 May, please remember", 'user');
    const smallTalk = estimateImportance('ok thanks!', 'user');
    expect(disclosure).toBeGreaterThan(0.6);
    expect(smallTalk).toBeLessThan(0.1);
    expect(estimateImportance("My sister Anna's wedding is on 3 May", 'agent')).toBeLessThan(
      estimateImportance("My sister Anna's wedding is on 3 May", 'user'),
    );
  });
});
