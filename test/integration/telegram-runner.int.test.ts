/**
 * The bot under load and under failure (real grammY + @grammyjs/runner against the loopback Bot
 * API): per-chat order with 50 chats x 20 messages in flight, chats in parallel; 429 with
 * retry_after, 502 and dropped connections retried; a stop in the middle of the load finishes
 * what was taken in (every handled message answered), and a restarted bot gets the rest, with
 * no message handled twice.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import type { FakeUser } from '../doubles/telegram-server';
import { startHarness, type Harness } from './telegram-harness';

const users = (n: number, from = 2000): FakeUser[] => Array.from({ length: n }, (_, i) => ({ id: from + i, first_name: `User${i}` }));

/** The message texts per chat, in the order the handler received them. */
function orderByChat(h: Harness): Map<string, string[]> {
  const byChat = new Map<string, string[]>();
  for (const m of h.handler.seen) byChat.set(m.authorId ?? '', [...(byChat.get(m.authorId ?? '') ?? []), m.text]);
  return byChat;
}

describe('Telegram bot under load and failure', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  // The order is the promise, not the speed: ~9 s alone, past 30 s with the whole suite on 2 cores.
  it('keeps each chat in order with 50 chats x 20 messages in flight, chats in parallel', async () => {
    const people = users(50);
    h = await startHarness({ allowedUsers: people.map((p) => p.id) });
    const harness = h;
    harness.handler.store = false;
    harness.handler.delayMs = () => Math.floor(Math.random() * 4);
    for (let i = 1; i <= 20; i++) for (const p of people) harness.fake.message(p, `m${i}`);
    await harness.fake.waitFor(
      () => harness.handler.seen.length === 1000 && people.every((p) => harness.fake.sent(p.id).length === 20),
      100_000,
      '1000 replies',
    );

    const expected = Array.from({ length: 20 }, (_, i) => `m${i + 1}`);
    for (const p of people) {
      expect(orderByChat(harness).get(String(p.id))).toEqual(expected);
      expect(harness.fake.sent(p.id).map((m) => m.text)).toEqual(expected.map((t) => `you said: ${t}`));
    }
    expect(harness.handler.maxConcurrent).toBeGreaterThan(1);
    expect(harness.handler.maxConcurrent).toBeLessThanOrEqual(50);
  }, 120_000);

  it('retries a reply after 429 (waiting retry_after), a 502 and a dropped connection; polling survives them too', async () => {
    h = await startHarness();
    const harness = h;
    const ana: FakeUser = { id: 1001, first_name: 'Ana' };
    harness.fake.fail('getUpdates', { kind: 'bad-gateway' }, { kind: 'drop' });
    harness.fake.fail('sendMessage', { kind: 'too-many-requests', retryAfter: 1 }, { kind: 'bad-gateway' }, { kind: 'drop' });
    harness.fake.message(ana, 'are you there?');
    await harness.fake.waitFor(() => harness.fake.sent(ana.id).length === 1, 10_000, 'the reply');

    expect(harness.fake.sent(ana.id).map((m) => m.text)).toEqual(['you said: are you there?']);
    const sends = harness.fake.calls('sendMessage');
    expect(sends.map((c) => c.fault ?? 'ok')).toEqual(['too-many-requests', 'bad-gateway', 'drop', 'ok']);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(990);
    expect(sends[3]!.at - sends[1]!.at).toBeLessThan(900);
    expect(
      harness.fake
        .calls('getUpdates')
        .slice(0, 2)
        .map((c) => c.fault),
    ).toEqual(['bad-gateway', 'drop']);
    expect(harness.handler.seen).toHaveLength(1);
    const retries = harness.logLines().filter((l) => l.includes('a Bot API call failed; retrying'));
    expect(retries.length).toBeGreaterThanOrEqual(5);
    expect(retries.join('\n')).not.toContain(harness.fake.token);
  });

  it('does not retry a request Telegram refuses for good (400)', async () => {
    h = await startHarness();
    const harness = h;
    await expect(harness.bot.api.editMessageText(1001, 424242, 'nothing to edit')).rejects.toMatchObject({ error_code: 400 });
    expect(harness.fake.calls('editMessageText')).toHaveLength(1);
  });

  it('stops cleanly mid-load: in-flight messages are answered, a restart gets the rest, nothing is handled twice', async () => {
    const people = users(10, 3000);
    h = await startHarness({ allowedUsers: people.map((p) => p.id) });
    const harness = h;
    harness.handler.store = false;
    harness.handler.delayMs = () => 3 + Math.floor(Math.random() * 5);
    for (let i = 1; i <= 30; i++) for (const p of people) harness.fake.message(p, `m${i}`);
    await harness.fake.waitFor(() => harness.handler.seen.length >= 60, 10_000, 'some handled messages');

    await harness.bot.stop();
    const handledBeforeStop = harness.handler.seen.length;
    expect(handledBeforeStop).toBeLessThan(300);
    expect(harness.bot.isRunning()).toBe(false);
    // Every message the first bot took in got its reply before stop() returned.
    for (const p of people) {
      const handled = orderByChat(harness).get(String(p.id)) ?? [];
      expect(harness.fake.sent(p.id).map((m) => m.text)).toEqual(handled.map((t) => `you said: ${t}`));
    }
    // Nothing happens while stopped.
    await new Promise((r) => setTimeout(r, 150));
    expect(harness.handler.seen.length).toBe(handledBeforeStop);

    harness.bot = harness.newBot();
    await harness.bot.start();
    await harness.fake.waitFor(
      () => harness.handler.seen.length >= 300 && people.every((p) => harness.fake.sent(p.id).length === 30),
      20_000,
      'the rest of the messages',
    );
    await new Promise((r) => setTimeout(r, 100));

    const ids = harness.handler.seen.map((m) => m.externalId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(300);
    const expected = Array.from({ length: 30 }, (_, i) => `m${i + 1}`);
    for (const p of people) {
      expect(orderByChat(harness).get(String(p.id))).toEqual(expected);
      expect(harness.fake.sent(p.id).map((m) => m.text)).toEqual(expected.map((t) => `you said: ${t}`));
    }
    expect(harness.fake.unconfirmed()).toBe(0);
  });
});
