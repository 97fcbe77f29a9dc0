/** Telegram messages as InboundMessages: scopes, names, media descriptions. */
import { describe, expect, it } from '@jest/globals';
import type { Message } from 'grammy/types';
import { messageTime, toInboundMessage } from '../../../src/channels/telegram/inbound';
import { displayName, telegramScope } from '../../../src/channels/telegram/telegram-scope';

const ana = { id: 42, is_bot: false, first_name: 'Ana', last_name: 'Lima', username: 'ana' };
const privateChat = { id: 42, type: 'private' as const, first_name: 'Ana' };

function message(fields: Partial<Message>): Message {
  return { message_id: 7, date: 1_700_000_000, chat: privateChat, from: ana, ...fields } as Message;
}

describe('telegram scopes', () => {
  it('keys a private chat by the user and a group by the chat; channels get none', () => {
    expect(telegramScope(privateChat, ana)).toEqual({ key: 'telegram:private:42', kind: 'private', ownerId: '42', title: 'Ana Lima' });
    expect(telegramScope({ id: -100, type: 'supergroup', title: 'Club' }, ana)).toEqual({ key: 'telegram:group:-100', kind: 'group', title: 'Club' });
    expect(telegramScope({ id: -5, type: 'channel', title: 'News' }, undefined)).toBeNull();
  });

  it('names people by name, else username, else id', () => {
    expect(displayName({ id: 1, first_name: ' ', username: 'bob' })).toBe('@bob');
    expect(displayName({ id: 1, first_name: '' })).toBe('1');
  });
});

describe('messageTime', () => {
  it("refines Telegram's whole second by the moment the message was taken in, within that second", () => {
    expect(messageTime(1_700_000_000, new Date(1_700_000_000_640))).toEqual(new Date(1_700_000_000_640));
    // Taken in later (a backlog): the last millisecond of its second.
    expect(messageTime(1_700_000_000, new Date(1_700_000_042_000))).toEqual(new Date(1_700_000_000_999));
    // A clock behind Telegram's: never before the second.
    expect(messageTime(1_700_000_000, new Date(1_699_999_999_000))).toEqual(new Date(1_700_000_000_000));
  });
});

describe('toInboundMessage', () => {
  const scope = telegramScope(privateChat, ana)!;

  it('maps a text reply with ids, time and author', () => {
    const m = toInboundMessage(
      message({ text: ' hi ', reply_to_message: { message_id: 3, date: 1, chat: privateChat, text: 'earlier' } as Message['reply_to_message'] }),
      scope,
      new Date(1_700_000_000_250),
    );
    expect(m).toEqual({
      channel: 'telegram',
      scopeKey: 'telegram:private:42',
      scopeKind: 'private',
      authorId: '42',
      authorName: 'Ana Lima',
      text: 'hi',
      timestamp: new Date(1_700_000_000_250),
      externalId: '42:7',
      replyTo: '42:3',
      replyToText: 'earlier',
      attachments: [],
    });
  });

  it('describes media without downloading them', () => {
    const text = (fields: Partial<Message>) => toInboundMessage(message(fields), scope)?.text;
    expect(text({ video: { file_id: 'v', file_unique_id: 'v', width: 1, height: 1, duration: 75 }, caption: 'the beach' })).toBe('[video 1:15] the beach');
    expect(text({ location: { latitude: 41.3874, longitude: 2.1686 } })).toBe('[location 41.38740, 2.16860]');
    expect(text({ contact: { phone_number: '1', first_name: 'Eva' } })).toBe('[contact Eva]');
    expect(text({ audio: { file_id: 'a', file_unique_id: 'a', duration: 3, performer: 'Nina', title: 'Song' } })).toBe('[audio Nina – Song]');
  });

  it('ignores service messages with nothing to answer', () => {
    expect(toInboundMessage(message({ new_chat_members: [ana] }), scope)).toBeNull();
  });
});

describe('forwarded messages', () => {
  const chat = { id: 42, type: 'private', first_name: 'Ana' } as Message['chat'];
  const base = { message_id: 5, date: 1, chat, from: { id: 42, is_bot: false, first_name: 'Ana' }, text: 'I live in Lisbon' };
  const scope = telegramScope(chat, base.from)!;

  it('names who wrote the message first: a person, a hidden account, a channel with its signature', () => {
    const origins = [
      { type: 'user', date: 1, sender_user: { id: 9, is_bot: false, first_name: 'Bea', last_name: 'Lopes' } },
      { type: 'hidden_user', date: 1, sender_user_name: 'Carlos' },
      { type: 'channel', date: 1, chat: { id: -100, type: 'channel', title: 'City news' }, message_id: 3, author_signature: 'Dora' },
    ];
    const names = origins.map((forward_origin) => toInboundMessage({ ...base, forward_origin } as unknown as Message, scope)?.forwardedFrom);
    expect(names).toEqual(['Bea Lopes', 'Carlos', 'City news, Dora']);
    expect(toInboundMessage(base as Message, scope)?.forwardedFrom).toBeUndefined();
  });
});
