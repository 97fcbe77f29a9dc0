/**
 * Groups (issue 17), through the real bot against the loopback Bot API on real SQLite: with
 * TELEGRAM_GROUPS=true the bot answers in a group only when mentioned, replied to or commanded,
 * unless the group's administrators chose `/replies all` (or the operator `cli replies`); every
 * message of the group is stored as the group's episode either way.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ANA, BEN, startHarness, textsIn, type Harness } from './telegram-harness';
import { cleanEnv, runCli } from '../support/run-process';

describe('Telegram groups', () => {
  let h: Harness;
  const GROUP = { id: -100300400, type: 'supergroup' as const, title: 'Climbing club' };
  const groupTexts = () => textsIn(h.fake, GROUP.id);

  /** Sends to the group and waits until the bot has handled it (stored or answered). */
  async function say(from: typeof ANA, text: string, replyTo?: number): Promise<void> {
    const seen = h.handler.seen.length + h.handler.observed.length;
    const sent = groupTexts().length;
    h.fake.message(from, text, { chat: GROUP, replyTo });
    await h.fake.waitFor(() => h.handler.seen.length + h.handler.observed.length > seen || groupTexts().length > sent, 5_000, `"${text}" handled`);
    // An answer follows the handler's return; give it the moment it needs.
    if (h.handler.seen.length + h.handler.observed.length > seen && h.handler.seen.at(-1)?.text === text)
      await h.fake.waitFor(() => groupTexts().length > sent, 5_000, `the answer to "${text}"`);
  }

  beforeAll(async () => {
    h = await startHarness({ groups: true });
  });
  afterAll(async () => h?.close());

  it('answers a mention, a reply to its message and a command; stores the rest without answering', async () => {
    await say(ANA, 'anyone up for the crag on Saturday?');
    await say(BEN, 'me! bring the long rope');
    expect(groupTexts()).toEqual([]);

    await say(ANA, '@nocturne_test_bot what did Ben say to bring?');
    expect(groupTexts()).toEqual(['you said: @nocturne_test_bot what did Ben say to bring?']);
    const botMessage = h.fake.sent(GROUP.id)[0]!;

    await say(BEN, 'and chalk?', botMessage.message_id);
    expect(groupTexts().at(-1)).toBe('you said: and chalk?');
    // A reply to a person's message is not for the bot.
    await say(ANA, 'yes, chalk', 999_999);
    expect(groupTexts()).toHaveLength(2);

    await say(BEN, '/start');
    expect(groupTexts().at(-1)).toContain(
      'I answer when someone mentions me, replies to one of my messages or sends a command (a group admin can make me answer everything: /replies all).',
    );
    await say(ANA, '/replies');
    expect(groupTexts().at(-1)).toMatch(/^In this group I answer only when someone mentions me, replies to one of my messages or sends me a command\./);

    const group = await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:group:${GROUP.id}` } });
    const episodes = await h.core.db.prisma.episode.findMany({ where: { scopeId: group.id }, orderBy: { timestamp: 'asc' } });
    expect(episodes.map((e) => e.content)).toEqual([
      'anyone up for the crag on Saturday?',
      'me! bring the long rope',
      '@nocturne_test_bot what did Ben say to bring?',
      'and chalk?',
      'yes, chalk',
    ]);
    expect(h.handler.observed.map((m) => m.text)).toEqual(['anyone up for the crag on Saturday?', 'me! bring the long rope', 'yes, chalk']);
  });

  it('/replies all by an administrator makes it answer every message; others may not change it', async () => {
    await say(BEN, '/replies all');
    expect(groupTexts().at(-1)).toBe('Only the group’s administrators can change when I answer here.');
    h.fake.admins.add(`${GROUP.id}:${ANA.id}`);
    await say(ANA, '/replies all');
    expect(groupTexts().at(-1)).toMatch(/^Done\. In this group I answer every message I can read\./);
    await say(BEN, 'it is raining though');
    expect(groupTexts().at(-1)).toBe('you said: it is raining though');
    await say(ANA, '/replies mentions');
    await say(BEN, 'never mind');
    expect(groupTexts().at(-1)).toMatch(/^Done\. In this group I answer only when/);
    // Private chats are unaffected.
    expect(
      await (async () => {
        const before = textsIn(h.fake, ANA.id).length;
        h.fake.message(ANA, 'hello in private');
        await h.fake.waitFor(() => textsIn(h.fake, ANA.id).length > before, 5_000, 'the private answer');
        return textsIn(h.fake, ANA.id).at(-1);
      })(),
    ).toBe('you said: hello in private');
  });

  it('the operator sets the same with cli replies', async () => {
    const env = cleanEnv({ DATA_DIR: h.core.config.dataDir });
    const key = `telegram:group:${GROUP.id}`;
    const set = await runCli(['replies', '--scope', key, 'all', '--json'], env);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ scope: key, groupReplies: 'all', changed: true });
    await say(BEN, 'what now');
    expect(groupTexts().at(-1)).toBe('you said: what now');
    const shown = await runCli(['replies', '--scope', key], env);
    expect(shown.stdout.trim()).toBe(`${key}: answers every message it can read (groupReplies all); every message is remembered`);
    expect((await runCli(['replies', '--scope', key, 'sometimes'], env)).code).toBe(2);
    void path;
  });
});

describe('Telegram groups with the real agent', () => {
  const GROUP = { id: -100500600, type: 'group' as const, title: 'Choir' };

  it('stores unaddressed talk in the open conversation, with no model call, and shows it to the model when addressed', async () => {
    const { startAnthropicDouble } = await import('../doubles/anthropic-server');
    const { createAgent } = await import('../../src/agent/agent');
    const { agentServices } = await import('../../src/service');
    const model = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Rehearsal is at eight.' }) });
    const h = await startHarness({
      groups: true,
      env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-groups-0000000', ANTHROPIC_BASE_URL: model.url },
    });
    try {
      const agent = createAgent(agentServices(h.core));
      h.handler.reply = async (message) => (await agent.handle(message)).text;
      h.handler.observe = (message) => agent.observe(message);
      const group = () => h.core.db.prisma.scope.findUnique({ where: { key: `telegram:group:${GROUP.id}` } });
      const episodes = async () => {
        const scope = await group();
        return scope ? h.core.db.prisma.episode.findMany({ where: { scopeId: scope.id }, orderBy: [{ timestamp: 'asc' }, { id: 'asc' }] }) : [];
      };

      h.fake.message(ANA, 'rehearsal moved to eight tonight', { chat: GROUP });
      for (let i = 0; (await episodes()).length < 1 && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
      expect(model.requests).toHaveLength(0);
      expect(textsIn(h.fake, GROUP.id)).toEqual([]);

      h.fake.message(BEN, '@nocturne_test_bot when is rehearsal?', { chat: GROUP });
      await h.fake.waitFor(() => textsIn(h.fake, GROUP.id).length === 1, 10_000, 'the answer');
      expect(textsIn(h.fake, GROUP.id)).toEqual(['Rehearsal is at eight.']);
      const stored = await episodes();
      expect(stored.map((e) => [e.role, e.content])).toEqual([
        ['user', 'rehearsal moved to eight tonight'],
        ['user', '@nocturne_test_bot when is rehearsal?'],
        ['agent', 'Rehearsal is at eight.'],
      ]);
      // One conversation: the unaddressed message is context for the answer.
      expect(new Set(stored.map((e) => e.conversationId)).size).toBe(1);
      const sentToModel = JSON.stringify(model.requests.at(-1)?.messages ?? []);
      expect(sentToModel).toContain('rehearsal moved to eight tonight');
    } finally {
      await h.close();
      await model.stop();
    }
  });
});
