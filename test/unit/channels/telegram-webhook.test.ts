/**
 * The two pure rules of the Telegram webhook: the secret header check, and the chat an update is
 * ordered by (one chat at a time across replicas).
 */
import { describe, expect, it } from '@jest/globals';
import type { Update } from 'grammy/types';
import { chatKeyOf } from '../../../src/channels/telegram/telegram-update-worker';
import { secretMatches } from '../../../src/channels/telegram/telegram-webhook';

const SECRET = 'abcdefghijklmnop_0123';

describe('secretMatches', () => {
  it('accepts the secret and nothing else', () => {
    expect(secretMatches(SECRET, SECRET)).toBe(true);
    for (const header of [undefined, '', `${SECRET} `, SECRET.slice(1), SECRET.toUpperCase(), `${SECRET}${SECRET}`])
      expect(secretMatches(header, SECRET)).toBe(false);
    // A header sent twice arrives as a list: refused, not joined.
    expect(secretMatches([SECRET, SECRET], SECRET)).toBe(false);
  });
});

describe('chatKeyOf', () => {
  const chat = { id: -100123, type: 'supergroup', title: 'g' };
  const from = { id: 42, is_bot: false, first_name: 'A' };
  it('orders messages, edits and button presses by their chat, inline queries by their sender', () => {
    expect(chatKeyOf({ update_id: 1, message: { message_id: 1, date: 0, chat, from, text: 'x' } } as Update)).toBe('-100123');
    expect(chatKeyOf({ update_id: 2, edited_message: { message_id: 1, date: 0, edit_date: 1, chat, from, text: 'x' } } as Update)).toBe('-100123');
    expect(
      chatKeyOf({ update_id: 3, callback_query: { id: 'q', from, chat_instance: 'c', message: { message_id: 1, date: 0, chat, text: 'x' } } } as Update),
    ).toBe('-100123');
    expect(chatKeyOf({ update_id: 4, inline_query: { id: 'q', from, query: '', offset: '' } } as Update)).toBe('user:42');
    expect(chatKeyOf({ update_id: 5 } as Update)).toBe('-');
  });
});
