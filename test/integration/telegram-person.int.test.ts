/**
 * What a person meets in chat (issue 17), through the real bot (grammY + runner) against the
 * loopback Bot API, on real SQLite, with sleep consolidation answered by the loopback Anthropic
 * double through the real SDK:
 * - `/forget N` shows the memory (and the versions that go with it) and asks, like `/forget words`;
 *   the number means the item of the list the person saw last, filtered as it was shown;
 * - `/sleep` says what it learned, changed and let fade, in the digest's words and numbers;
 * - counts read as English ("This memory mentions", "I forgot 1 memory. It is gone").
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SentMessage } from '../doubles/telegram-server';
import { ANA, converse, startHarness, type Harness } from './telegram-harness';

describe('Telegram: forgetting by number, /sleep, wording', () => {
  let h: Harness;
  let model: AnthropicDouble;
  let ana: string;
  const ids: Record<string, string> = {};

  const buttons = (message: SentMessage) =>
    (message.reply_markup?.inline_keyboard ?? []).flat().map((b) => ('callback_data' in b ? `${b.text}=${b.callback_data}` : b.text));
  const lastSent = () => h.fake.sent(ANA.id)[h.fake.sent(ANA.id).length - 1]!;
  const exists = async (id: string) => (await h.core.db.prisma.memory.count({ where: { id } })) === 1;

  async function press(message: SentMessage, label: RegExp): Promise<SentMessage> {
    const button = buttons(message).find((b) => label.test(b));
    if (!button) throw new Error(`no button ${label} in ${JSON.stringify(buttons(message))}`);
    const edits = message.edits;
    h.fake.press(ANA, message, button.slice(button.indexOf('=') + 1));
    await h.fake.waitFor(() => message.edits > edits, 5_000, `the edit after pressing ${button}`);
    return message;
  }

  beforeAll(async () => {
    // The consolidation "model": learns the cello from the person's message, corrects the coffee
    // memory and lets the chess memory fade, naming memories by the M-ids of its prompt.
    model = await startAnthropicDouble({
      responder: (seen) => {
        const system = seen.system ?? '';
        const prompt = seen.messages.at(-1)?.text ?? '';
        if (!system.includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        const episode = (words: string) =>
          /^(E\d+) .*$/m.exec(
            prompt
              .split('\n')
              .filter((l) => l.includes(words))
              .join('\n'),
          )?.[1];
        const memory = (words: string) => new RegExp(`^(M\\d+) \\[[^\\]]*\\] ${words}`, 'm').exec(prompt)?.[1];
        const cello = episode('cello');
        const coffee = episode('oat milk');
        if (process.env.DEBUG_PROMPT) console.log(prompt);
        if (!cello && !coffee) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            new: cello ? [{ category: 'goal', content: 'Ana is learning the cello', confidence: 0.9, source: 'stated', episodes: [cello] }] : [],
            update:
              memory('Ana drinks black coffee') && coffee
                ? [{ memory: memory('Ana drinks black coffee'), content: 'Ana drinks oat milk lattes', episodes: [coffee], reason: 'she switched' }]
                : [],
            decay: memory('Ana plays chess') ? [{ memory: memory('Ana plays chess'), confidence: 0.05, reason: 'she gave it up' }] : [],
          }),
        };
      },
    });
    h = await startHarness({ env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-person-0000000', ANTHROPIC_BASE_URL: model.url } });
    await converse(h.fake, ANA, 'hello');
    const prisma = h.core.db.prisma;
    ana = (await prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
    const now = new Date();
    await prisma.$transaction(async (tx) => {
      for (let i = 0; i < 3; i++)
        ids[`pref${i}`] = (
          await createMemory(
            tx,
            { scopeId: ana, category: 'preference', content: `Ana prefers tea blend number ${i}`, confidence: 0.95 - i * 0.01 },
            { by: 'owner', now },
          )
        ).id;
      for (let i = 0; i < 3; i++)
        ids[`rel${i}`] = (
          await createMemory(
            tx,
            { scopeId: ana, category: 'relationship', content: `Ana has a cousin called Person${i}`, confidence: 0.8 - i * 0.01 },
            { by: 'owner', now },
          )
        ).id;
      ids.jazz = (
        await createMemory(tx, { scopeId: ana, category: 'interest', content: 'Ana listens to jazz on Sundays', confidence: 0.68 }, { by: 'owner', now })
      ).id;
      ids.oldCity = (
        await createMemory(
          tx,
          { scopeId: ana, category: 'fact', content: 'Ana lives in Lisbon', confidence: 0.7 },
          { by: 'owner', now: new Date(now.getTime() - 60_000) },
        )
      ).id;
      ids.city = (await supersedeMemory(tx, ana, ids.oldCity, { content: 'Ana lives in Porto' }, { now, reason: 'moved', by: 'owner' })).current.id;
    });
  });
  afterAll(async () => {
    await h?.close();
    await model?.stop();
  });

  it('/forget N after a category filter shows the item of the filtered list and forgets it only after Forget', async () => {
    await converse(h.fake, ANA, '/memories');
    expect(lastSent().text).toContain('2. Ana prefers tea blend number 1');
    await converse(h.fake, ANA, '/memories relationship');
    expect(lastSent().text).toContain('2. Ana has a cousin called Person1');

    await converse(h.fake, ANA, '/forget 2');
    const question = lastSent();
    expect(question.text).toBe('Item 2 of the last /memories list you saw:\n\n• Ana has a cousin called Person1\n\nForget it?');
    expect(buttons(question).map((b) => b.split('=')[0])).toEqual(['Forget it', 'Keep']);
    // Nothing is gone before the press.
    expect(await exists(ids.rel1!)).toBe(true);

    await press(question, /^Forget it=/);
    expect(question.text).toBe('Done: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.');
    expect(await exists(ids.rel1!)).toBe(false);
    expect(await exists(ids.pref1!)).toBe(true);
    expect(await converse(h.fake, ANA, '/forget 2')).toEqual(['Item 2 is already forgotten.']);
  });

  it('/forget N shows the earlier versions that go with the memory; Keep forgets nothing', async () => {
    await converse(h.fake, ANA, '/memories fact');
    expect(lastSent().text).toContain('1. Ana lives in Porto');
    await converse(h.fake, ANA, '/forget 1');
    const question = lastSent();
    expect(question.text).toBe(
      'Item 1 of the last /memories list you saw, with 1 earlier version that goes with it:\n\n• Ana lives in Porto\n• Ana lives in Lisbon (earlier version)\n\nForget them?',
    );
    await press(question, /^Keep=/);
    expect(question.text).toBe('Kept: I forgot nothing.');
    expect(await exists(ids.city!)).toBe(true);
    expect(await exists(ids.oldCity!)).toBe(true);

    await converse(h.fake, ANA, '/forget 1');
    await press(lastSent(), /^Forget all 2=/);
    expect(lastSent().text).toBe('Done: I forgot 2 memories. They are gone from my memory, my search index and my notes about you.');
    expect(await exists(ids.city!)).toBe(false);
    expect(await exists(ids.oldCity!)).toBe(false);
  });

  it('/forget words with one match speaks of one memory', async () => {
    await converse(h.fake, ANA, '/forget jazz');
    const question = lastSent();
    expect(question.text).toBe('This memory mentions “jazz”:\n\n• Ana listens to jazz on Sundays\n\nForget it?');
    await press(question, /^Forget it=/);
    expect(question.text).toBe('Done: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.');
  });

  it('/sleep says what it learned, changed and let fade, numbered for /forget N', async () => {
    const now = new Date();
    await h.core.db.prisma.$transaction(async (tx) => {
      ids.coffee = (
        await createMemory(tx, { scopeId: ana, category: 'preference', content: 'Ana drinks black coffee', confidence: 0.8 }, { by: 'owner', now })
      ).id;
      ids.chess = (await createMemory(tx, { scopeId: ana, category: 'interest', content: 'Ana plays chess', confidence: 0.5 }, { by: 'owner', now })).id;
    });
    await h.core.embeddingWorker.drain();
    await converse(h.fake, ANA, 'I started learning the cello this week');
    await converse(h.fake, ANA, 'No more black coffee for me, I drink oat milk lattes now; chess bores me');

    const [answer] = await converse(h.fake, ANA, '/sleep');
    expect(answer).toMatch(/^Done: I went through our recent conversations \(\d+ episodes consolidated\)\.\n\n/);
    expect(answer).not.toMatch(/\(s\)/);
    expect(answer).toContain('New\n\n1. Ana is learning the cello');
    expect(answer).toContain('Updated\n\n2. Ana drinks oat milk lattes (was: Ana drinks black coffee)');
    expect(answer).toContain('Faded\n\n3. Ana plays chess');
    expect(answer).toMatch(/Reply \/forget N to make me forget one, \/why N to see where it came from\.$/);
    expect(answer).not.toContain('#');

    // The numbers are the summary's.
    await converse(h.fake, ANA, '/forget 1');
    expect(lastSent().text).toBe(
      'Item 1 of the last /sleep summary you saw:\n\n• Ana is learning the cello\n\n1 message of our conversations goes with it; its text will be replaced by a placeholder.\n\nForget it?',
    );
    expect((await converse(h.fake, ANA, '/why 1'))[0]).toMatch(
      /^1\. Ana is learning the cello\n\nI learned it from this message:\n• .*“I started learning the cello this week”$/,
    );
  });

  it('/sleep with nothing new says so', async () => {
    await converse(h.fake, ANA, 'the weather is grey');
    const [answer] = await converse(h.fake, ANA, '/sleep');
    expect(answer).toBe('Done: I went through our recent conversations (1 episode consolidated). Nothing in them changed what I know about you.');
  });
});
