/**
 * Groups with speakers, through the real bot (grammY against the loopback Bot API), the real agent
 * and real consolidation (the loopback Anthropic model) on real SQLite, in a two-person group:
 * - "I am vegetarian" from Ana becomes a memory about Ana: the consolidation prompt names Ana
 *   (and her speaker id) on that line, the stored memory says "Ana is vegetarian" and records her
 *   as its subject; a model that still writes "The user …" gets its memory stored about Ana too;
 * - Ana's private memories are absent from every group output: the reply prompt sent to the
 *   model, the group's /digest, /memories in the group;
 * - /memories and /forget in the group reach what the asking member said: Bo can neither list
 *   nor forget Ana's memory (by words, by number, nor by pressing her confirmation), while a
 *   group administrator can.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { speakerFactsPlan } from '../doubles/llm-script';
import type { FakeUser, SentMessage } from '../doubles/telegram-server';
import { ANA, converse, startHarness, textsIn, type Harness } from './telegram-harness';

const TIMEOUT = 120_000;
const WAIT_MS = 30_000;
const BO: FakeUser = { id: 1003, first_name: 'Bo' };
const GROUP = { id: -100700800, type: 'supergroup' as const, title: 'Dinner club' };
const PRIVATE_FACT = 'peanut allergy';

describe('a group with speakers', () => {
  let h: Harness;
  let model: AnthropicDouble;
  /** Answer consolidation like a model that ignores the group's instruction to name people. */
  let ignoreNames = false;
  const prisma = () => h.core.db.prisma;
  const groupScope = () => prisma().scope.findUniqueOrThrow({ where: { key: `telegram:group:${GROUP.id}` } });
  const buttons = (message: SentMessage) =>
    (message.reply_markup?.inline_keyboard ?? []).flat().flatMap((b) => ('callback_data' in b ? [{ text: b.text, data: b.callback_data }] : []));

  /** Says `text` in the group without addressing the bot, and waits until it is stored. */
  async function sayInGroup(from: FakeUser, text: string): Promise<void> {
    h.fake.message(from, text, { chat: GROUP });
    for (let i = 0; i < WAIT_MS / 20; i++) {
      const scope = await prisma().scope.findUnique({ where: { key: `telegram:group:${GROUP.id}` } });
      if (scope && (await prisma().episode.count({ where: { scopeId: scope.id, content: text } })) > 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`"${text}" was not stored`);
  }

  /** Sends `text` to the group and returns the bot's next message there that `done` accepts. */
  async function askInGroup(from: FakeUser, text: string, done: (answer: string) => boolean = () => true): Promise<string> {
    const before = h.fake.sent(GROUP.id).length;
    h.fake.message(from, text, { chat: GROUP });
    return h.fake.waitFor(() => textsIn(h.fake, GROUP.id).slice(before).find(done), WAIT_MS, `the answer to "${text}"`);
  }

  const lastGroupMessage = () => h.fake.sent(GROUP.id).at(-1)!;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if ((seen.system ?? '').includes('memory consolidation system')) return speakerFactsPlan(seen.messages.at(-1)?.text ?? '', { ignoreNames });
        return { kind: 'text', text: 'Noted.' };
      },
    });
    h = await startHarness({
      groups: true,
      allowedUsers: [ANA.id, BO.id],
      env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-speakers-0000000', ANTHROPIC_BASE_URL: model.url },
    });
    const agent = createAgent(agentServices(h.core));
    h.handler.reply = async (message) => (await agent.handle(message)).text;
    h.handler.observe = (message) => agent.observe(message);

    // Ana's private chat learns something the group must never see.
    expect(await converse(h.fake, ANA, `I have a ${PRIVATE_FACT}`)).toEqual(['Noted.']);
    const slept = await converse(h.fake, ANA, '/sleep');
    expect(slept.at(-1)).toMatch(/^Done: /);
    const ana = await prisma().scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } });
    expect((await prisma().memory.findMany({ where: { scopeId: ana.id } })).map((m) => m.content)).toEqual([`The user has a ${PRIVATE_FACT}`]);
  }, TIMEOUT);

  afterAll(async () => {
    await h?.close();
    await model?.stop();
  });

  it(
    '"I am vegetarian" from Ana becomes a memory about Ana, named on its prompt line',
    async () => {
      await sayInGroup(ANA, 'I am vegetarian');
      await sayInGroup(BO, 'I am a climber');
      const group = await groupScope();
      const said = await prisma().episode.findMany({ where: { scopeId: group.id, role: 'user' }, orderBy: { timestamp: 'asc' } });
      expect(said.map((e) => [e.author, e.authorId, e.content])).toEqual([
        ['Ana', String(ANA.id), 'I am vegetarian'],
        ['Bo', String(BO.id), 'I am a climber'],
      ]);

      expect(await askInGroup(ANA, '/sleep', (t) => t.startsWith('Done: '))).toMatch(/^Done: /);
      const prompt = model.requests
        .filter((r) => (r.system ?? '').includes('memory consolidation system'))
        .at(-1)!
        .messages.at(-1)!.text;
      expect(prompt).toContain('## A group chat');
      expect(prompt).toMatch(new RegExp(`^E\\d+ \\S+ \\S+ user \\(Ana, speaker ${ANA.id}\\): I am vegetarian$`, 'm'));
      expect(prompt).toMatch(new RegExp(`^E\\d+ \\S+ \\S+ user \\(Bo, speaker ${BO.id}\\): I am a climber$`, 'm'));

      const memories = await prisma().memory.findMany({ where: { scopeId: group.id }, orderBy: { content: 'asc' } });
      expect(memories.map((m) => [m.content, m.subjectId, m.subjectName])).toEqual([
        ['Ana is vegetarian', String(ANA.id), 'Ana'],
        ['Bo is a climber', String(BO.id), 'Bo'],
      ]);
    },
    TIMEOUT,
  );

  it(
    'a model that still writes "the user" gets its group memory stored about the speaker, by name',
    async () => {
      ignoreNames = true;
      try {
        await sayInGroup(ANA, 'I have a red bike');
        expect(await askInGroup(ANA, '/sleep', (t) => t.startsWith('Done: '))).toMatch(/^Done: /);
      } finally {
        ignoreNames = false;
      }
      const group = await groupScope();
      const bike = await prisma().memory.findFirstOrThrow({ where: { scopeId: group.id, content: { contains: 'red bike' } } });
      expect([bike.content, bike.subjectId, bike.subjectName]).toEqual(['Ana has a red bike', String(ANA.id), 'Ana']);
    },
    TIMEOUT,
  );

  it(
    'Ana’s private memories are absent from every group output: the reply prompt, /digest, /memories',
    async () => {
      const asked = model.requests.length;
      expect(await askInGroup(BO, '@nocturne_test_bot what should we cook for Ana tonight? She has allergies?')).toBe('Noted.');
      const replies = model.requests.slice(asked).filter((r) => !(r.system ?? '').includes('memory consolidation system'));
      expect(replies.length).toBeGreaterThan(0);
      for (const request of replies) expect(JSON.stringify([request.system, request.messages])).not.toContain('peanut');

      const digest = await askInGroup(ANA, '/digest');
      expect(digest).toContain('Ana is vegetarian');
      expect(digest).not.toContain('peanut');

      const anaList = await askInGroup(ANA, '/memories');
      expect(anaList).toContain('What I remember about you, Ana, from this group');
      expect(anaList).toContain('Ana is vegetarian');
      expect(anaList).not.toContain('peanut');
      expect(anaList).not.toContain('Bo is a climber');

      const boList = await askInGroup(BO, '/memories');
      expect(boList).toContain('Bo is a climber');
      expect(boList).not.toContain('Ana is vegetarian');
      expect(boList).not.toContain('peanut');
    },
    TIMEOUT,
  );

  it(
    'Bo’s /forget in the group cannot remove Ana’s memory; an administrator’s can',
    async () => {
      const group = await groupScope();
      const vegetarian = () => prisma().memory.findFirst({ where: { scopeId: group.id, content: 'Ana is vegetarian' } });

      // By words: Bo's request reaches only the memories about Bo.
      expect(await askInGroup(BO, '/forget vegetarian')).toBe('Nothing I remember about you mentions “vegetarian”.');
      // By number: item 1 of the list Ana saw last is hers.
      expect(await askInGroup(ANA, '/memories')).toContain('1. Ana is vegetarian');
      expect(await askInGroup(BO, '/forget 1')).toMatch(/^Item 1 is about someone else: in a group you can make me forget only what I learned about you/);
      // Pressing Ana's own confirmation: only she can answer it.
      expect(await askInGroup(ANA, '/forget vegetarian')).toContain('Ana is vegetarian');
      const question = lastGroupMessage();
      const forgetButton = buttons(question).find((b) => b.data.startsWith('fg:y:'))!;
      const pressed = h.fake.calls('answerCallbackQuery').length;
      h.fake.press(BO, question, forgetButton.data);
      await h.fake.waitFor(() => h.fake.calls('answerCallbackQuery').length > pressed, WAIT_MS, 'the answer to Bo’s press');
      expect(JSON.stringify(h.fake.calls('answerCallbackQuery').at(-1)!.payload)).toContain('Only the one who asked can answer this.');
      expect(await vegetarian()).toMatchObject({ active: true });
      // The episode Ana said it in is untouched, too.
      expect(await prisma().episode.count({ where: { scopeId: group.id, content: 'I am vegetarian' } })).toBe(1);

      // A group administrator reaches all of the group's memories.
      h.fake.admins.add(`${GROUP.id}:${BO.id}`);
      const confirm = await askInGroup(BO, '/forget vegetarian');
      expect(confirm).toContain('Ana is vegetarian');
      const adminQuestion = lastGroupMessage();
      const edits = adminQuestion.edits;
      h.fake.press(BO, adminQuestion, buttons(adminQuestion).find((b) => b.data.startsWith('fg:y:'))!.data);
      await h.fake.waitFor(() => adminQuestion.edits > edits && /^Done: /.test(adminQuestion.text ?? ''), WAIT_MS, 'the forget');
      expect(await vegetarian()).toBeNull();
      // Bo's own memory stays.
      expect(await prisma().memory.count({ where: { scopeId: group.id, content: 'Bo is a climber' } })).toBe(1);
    },
    TIMEOUT,
  );
});
