import { describe, expect, it } from '@jest/globals';
import { contentOf, parseInboundMessage } from '../../../src/agent/inbound-message';
import { ValidationError } from '../../../src/shared/errors';

const valid = { channel: 'telegram', scopeKey: 'telegram:private:1', scopeKind: 'private', text: 'hi', timestamp: '2026-01-05T10:00:00Z' };

describe('parseInboundMessage', () => {
  it('accepts a channel message, with ids given as numbers and the time as a string', () => {
    const message = parseInboundMessage({ ...valid, authorId: 42, externalId: 7, replyTo: 6 });
    expect(message).toMatchObject({ authorId: '42', externalId: '7', replyTo: '6' });
    expect(message.timestamp).toEqual(new Date('2026-01-05T10:00:00Z'));
  });

  it('names every bad field at once', () => {
    let error: unknown;
    try {
      parseInboundMessage({ channel: ' ', scopeKey: 'k', scopeKind: 'martian', text: '', timestamp: 'yesterday' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    const message = (error as ValidationError).message;
    expect(message).toMatch(/channel must not be empty/);
    expect(message).toMatch(/scopeKind must be one of private, group, user, source/);
    expect(message).toMatch(/timestamp must be a Date or an ISO 8601/);
    expect((error as ValidationError).code).toBe('agent.invalid_message');
  });

  it('refuses a scope key with control characters (a NUL would name a memory no one can find again)', () => {
    expect(() => parseInboundMessage({ ...valid, scopeKey: 'webhook:crm:a\u0000b' })).toThrow(/scopeKey must not contain control characters/);
    expect(() => parseInboundMessage({ ...valid, scopeKey: 'webhook:crm:\u001B[2J' })).toThrow(/scopeKey must not contain control characters/);
  });

  it('allows an empty text only with an attachment, and describes attachments in the content', () => {
    expect(() => parseInboundMessage({ ...valid, text: '  ' })).toThrow(/text must not be empty unless something is attached/);
    const message = parseInboundMessage({ ...valid, text: '', attachments: [{ kind: 'photo', name: 'cat.jpg', mime: 'image/jpeg', size: 1200 }] });
    expect(contentOf(message)).toBe('[photo: cat.jpg, image/jpeg, 1200 bytes]');
  });

  it('keeps the words of a channel that already described its media, without describing it twice', () => {
    const message = parseInboundMessage({ ...valid, text: '[photo] my new flat', attachments: [{ kind: 'photo', size: 10 }] });
    expect(contentOf(message)).toBe('[photo] my new flat');
  });

  it('refuses an attachment kind no channel uses', () => {
    expect(() => parseInboundMessage({ ...valid, attachments: [{ kind: 'hologram' }] })).toThrow(/attachments\[\]\.kind must be one of photo/);
  });
});
