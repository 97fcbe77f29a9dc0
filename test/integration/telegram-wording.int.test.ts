/**
 * Words a person reads on Telegram (real grammY against the loopback Bot API, real SQLite):
 * a /forget that finds only messages offers a button that says what it does (never "Forget all
 * 0"), and the digest counts what was forgotten the way the confirmation did (every version that
 * went), so "I forgot 3 memories" is not followed by "Forgotten at your request: 2 memories".
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import type { SentMessage } from '../doubles/telegram-server';
import { ANA, converse, startHarness, type Harness } from './telegram-harness';

describe('Telegram wording', () => {
  let h: Harness;
  let ana: string;
  const buttons = (message: SentMessage) => (message.reply_markup?.inline_keyboard ?? []).flat().map((b) => b.text);
  const lastSent = () => h.fake.sent(ANA.id)[h.fake.sent(ANA.id).length - 1]!;

  beforeAll(async () => {
    h = await startHarness();
    await converse(h.fake, ANA, 'my red bicycle got a flat tyre again');
    ana = (await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
  });
  afterAll(async () => h?.close());

  it('a /forget that finds only messages does not offer "Forget all 0"', async () => {
    await converse(h.fake, ANA, '/forget red bicycle');
    const question = lastSent();
    process.stderr.write(`telegram-wording: buttons ${JSON.stringify(buttons(question))}\n`);
    expect(question.text).toContain('No memory mentions “red bicycle”');
    expect(question.text).toContain('1 message of our conversations goes with it');
    expect(buttons(question)).not.toContain('Forget all 0');
    expect(buttons(question)[0]).toBe('Forget it');
  }, 60_000);

  it('the digest counts the forgotten versions as the confirmation did', async () => {
    const now = new Date();
    await h.core.db.prisma.$transaction(async (tx) => {
      const first = await createMemory(tx, { scopeId: ana, category: 'fact', content: 'Ana keeps a canoe at the lake', confidence: 0.9 }, { by: 'owner', now });
      await supersedeMemory(tx, ana, first.id, { content: 'Ana keeps a canoe at the river' }, { now, reason: 'moved it', by: 'owner' });
      await createMemory(tx, { scopeId: ana, category: 'goal', content: 'Ana wants a second canoe', confidence: 0.8 }, { by: 'owner', now });
    });
    await converse(h.fake, ANA, '/forget canoe');
    const question = lastSent();
    const edits = question.edits;
    const yes = (question.reply_markup?.inline_keyboard ?? []).flat().find((b) => b.text.startsWith('Forget'));
    h.fake.press(ANA, question, 'callback_data' in yes! ? yes.callback_data! : '');
    await h.fake.waitFor(() => question.edits > edits, 5_000, 'the confirmation');
    const done = question.text ?? '';
    const digest = (await converse(h.fake, ANA, '/digest')).join('\n');
    process.stderr.write(`telegram-wording: ${JSON.stringify(done)} / ${JSON.stringify(digest.match(/Forgotten[^\n]*/)?.[0])}\n`);
    const forgot = Number(/I forgot (\d+) memories/.exec(done)?.[1]);
    expect(forgot).toBe(3);
    expect(digest).toContain(`Forgotten at your request: ${forgot} memories`);
  }, 60_000);
});
