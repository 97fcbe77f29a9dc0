/**
 * Correcting and pinning a memory through the doors people and operators use, on the service as
 * `npm start` composes it (the real bot, grammY against the loopback Bot API; the real agent
 * against the loopback Anthropic model; real SQLite; the admin API over HTTP):
 * - `/fix N new text` makes a new version: `/memories` lists it, `/why` shows the old one in its
 *   history and the messages it was learned from, the audit holds the correction, and the next
 *   reply's prompt holds the new text and not the old; `/pin N` pins it (📌 in the list);
 * - bad input (no number, no text, a number not in the list, a secret) changes nothing;
 * - in a group a member corrects or pins only what was learned about them, an administrator anything;
 * - `PATCH /scopes/:id/memories/:mid`: 200 and audited as the operator's; another scope's memory
 *   404 without its text; a bad body 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Core } from '../../src/core';
import { createMemory, decayMemory } from '../../src/memory/memories/memory-writer';
import type { RunningService } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { startComposedService } from './composed-service';

const ANA: FakeUser = { id: 7301, first_name: 'Ana' };
const BO: FakeUser = { id: 7302, first_name: 'Bo' };
const GROUP = { id: -100730300, type: 'supergroup' as const, title: 'Climbing club' };
const ADMIN_TOKEN = 'adm-memory-fix-0123456789abcdef';
const API_KEY = 'sk-ant-chaos-memory-fix-0000000';
const WAIT_MS = 30_000;
const TIMEOUT = 180_000;
/** Shaped like an Anthropic key: the filter knows it for a credential. */
const PASTED_KEY = 'sk-ant-api03-QWERTYUIOPASDFGHJKLZXCVBNMqwertyuiopasdfgh0123';

describe('correcting and pinning memories through Telegram and the admin API (chaos)', () => {
  const logs = memoryLogger();
  const figures: string[] = [];
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let core: Core;
  let apiBase: string;
  let anaScope: string;
  const ids: Record<string, string> = {};

  const promptText = (seen: SeenLlmRequest) => [seen.system ?? '', ...seen.messages.map((m) => m.text)].join('\n');

  /** Sends `text` as `from` (in `chat`, default their private chat) and returns the bot's next answer there. */
  async function ask(from: FakeUser, text: string, chat?: typeof GROUP): Promise<string> {
    const chatId = chat?.id ?? from.id;
    const before = fake.sent(chatId).length;
    fake.message(from, text, chat ? { chat } : {});
    const answer = await fake.waitFor(() => fake.sent(chatId)[before], WAIT_MS, `the answer to "${text}"`);
    return answer.text ?? '';
  }

  async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${apiBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  /** What a refused request must leave exactly as it was: every memory row and the audit trail. */
  async function state(scopeId: string): Promise<string> {
    const [memories, audit] = await Promise.all([
      core.db.prisma.memory.findMany({ where: { scopeId }, orderBy: { id: 'asc' } }),
      core.db.prisma.auditEvent.count({ where: { scopeId } }),
    ]);
    // `embeddedWith` is the embedding worker's, written whenever it gets to a new memory: no command's.
    return JSON.stringify({ memories: memories.map(({ embeddedWith: _embedded, ...memory }) => memory), audit });
  }

  /** Stores a memory as the owner's, citing `episodeIds` when given. */
  async function remember(scopeId: string, content: string, confidence: number, episodeIds: string[] = []): Promise<string> {
    const memory = await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'relationship', content, confidence, sourceEpisodeIds: episodeIds }, { by: 'owner', now: new Date() }),
    );
    return memory.id;
  }

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    fake = await startFakeTelegram();
    ({ service, apiBase } = await startComposedService({
      dataDir: tempDir('nocturne-chaos-memory-fix-'),
      logger: logs.logger,
      env: {
        ADMIN_TOKEN,
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_BASE_URL: double.url,
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: [ANA.id, BO.id].join(','),
        TELEGRAM_GROUPS: 'true',
      },
    }));
    core = service.core;
    expect(await ask(ANA, 'Jordi came over for dinner yesterday')).toBe('Noted.');
    anaScope = (await core.directory.findByKey(`telegram:private:${ANA.id}`))!.id;
    const dinner = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: anaScope, content: { contains: 'Jordi came over' } } });
    ids.viola = await remember(anaScope, 'Ana plays the viola', 0.95);
    ids.jordi = await remember(anaScope, 'Jordi is an acquaintance of Ana', 0.9, [dinner.id]);
  }, TIMEOUT);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
    process.stderr.write(`memory-fix:\n  ${figures.join('\n  ')}\n`);
  });

  it(
    '/fix N makes a new version: listed, its history in /why, audited, and the next prompt has the new text only',
    async () => {
      expect(await ask(ANA, '/memories')).toContain('2. Jordi is an acquaintance of Ana');

      // Bad input: each answer says why, and nothing changes.
      const before = await state(anaScope);
      const refusals = {
        bare: await ask(ANA, '/fix'),
        noText: await ask(ANA, '/fix 2'),
        unknown: await ask(ANA, '/fix 99 Jordi is my brother'),
        secret: await ask(ANA, `/fix 2 Jordi's door code is ${PASTED_KEY}`),
        empty: await ask(ANA, '/pin'),
        firstPerson: await ask(ANA, '/fix 2 my husband is Jordi'),
      };
      expect(refusals).toEqual({
        bare: 'Tell me what is true instead: /fix 3 Jordi is my husband corrects item 3 of the last /memories list (or digest) you saw.',
        noText: 'What should item 2 say instead? Write it after the number: /fix 2 Jordi is my husband. Nothing changed.',
        unknown: 'There is no number 99 in the last /memories list you saw (it showed 1–2). Nothing changed.',
        secret: 'The new text holds what looks like a password, key or token, and I never keep secrets; nothing changed.',
        empty: expect.stringMatching(/^Which one\? \/pin 3/),
        firstPerson: expect.stringMatching(/^I keep memories about you in the third person, .* Nothing changed\.$/),
      });
      expect(await state(anaScope)).toBe(before);

      expect(await ask(ANA, '/fix 2 Jordi is my husband')).toBe('Corrected: Jordi is my husband (was: Jordi is an acquaintance of Ana)');
      const list = await ask(ANA, '/memories');
      expect(list).toContain('1. Jordi is my husband');
      expect(list).not.toContain('acquaintance');
      const why = await ask(ANA, '/why 1');
      expect(why).toMatch(/^1\. Jordi is my husband\n\nBefore, it said:\n• until .*: “Jordi is an acquaintance of Ana”/);
      // The evidence stays: the message it was learned from.
      expect(why).toContain('“Jordi came over for dinner yesterday”');

      const current = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId: anaScope, content: 'Jordi is my husband' } });
      const old = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: ids.jordi! } });
      expect(old).toMatchObject({ active: false, supersededById: current.id });
      const correction = await core.db.prisma.auditEvent.findFirstOrThrow({ where: { scopeId: anaScope, action: 'correct', subjectId: current.id } });
      expect(correction.reason).toBe('corrected by the person (/fix in Telegram)');
      expect(correction.before).toMatchObject({ content: 'Jordi is an acquaintance of Ana' });
      expect(correction.after).toMatchObject({ content: 'Jordi is my husband', supersedes: ids.jordi });

      // The next reply: its prompt (the soul and the memories retrieved for it) says the new text, never the old.
      const seen = double.requests.length;
      expect(await ask(ANA, 'Who is Jordi to me, again?')).toBe('Noted.');
      const prompt = promptText(double.requests[seen]!);
      figures.push(
        `reply prompt after /fix: new text ${prompt.includes('Jordi is my husband') ? 'present' : 'absent'}, old text ${prompt.includes('acquaintance') ? 'present' : 'absent'}`,
      );
      expect({ newText: prompt.includes('Jordi is my husband'), oldText: prompt.includes('acquaintance') }).toEqual({ newText: true, oldText: false });

      expect(await ask(ANA, '/memories')).toContain('1. Jordi is my husband');
      expect(await ask(ANA, '/pin 2')).toBe('Pinned: Ana plays the viola. It will not fade; /unpin 2 lets it.');
      expect(await ask(ANA, '/memories')).toContain('2. 📌 Ana plays the viola');
      expect((await core.db.prisma.memory.findUniqueOrThrow({ where: { id: ids.viola! } })).pinned).toBe(true);
      expect(await ask(ANA, '/unpin 2')).toBe('Unpinned: Ana plays the viola. It fades like any other memory when nothing confirms it.');
      expect(await core.db.prisma.auditEvent.count({ where: { scopeId: anaScope, subjectId: ids.viola!, action: { in: ['pin', 'unpin'] } } })).toBe(2);
    },
    TIMEOUT,
  );

  it(
    'in a group a member corrects or pins only what was learned about them; an administrator anything',
    async () => {
      // A command makes the group's scope (and is answered) like any message addressed to the bot.
      await ask(ANA, '/memories', GROUP);
      const scope = (await core.directory.findByKey(`telegram:group:${GROUP.id}`))!;
      const about = await remember(scope.id, 'Ana leads on the hard routes', 0.9);
      await core.db.prisma.memory.update({ where: { id: about }, data: { subjectId: String(ANA.id), subjectName: 'Ana' } });

      expect(await ask(ANA, '/memories', GROUP)).toContain('1. Ana leads on the hard routes');
      const before = await state(scope.id);
      expect(await ask(BO, '/fix 1 Ana is afraid of heights', GROUP)).toMatch(
        /^Item 1 is about someone else: in a group you can change only what I learned about you/,
      );
      expect(await ask(BO, '/pin 1', GROUP)).toMatch(/^Item 1 is about someone else/);
      expect(await state(scope.id)).toBe(before);

      fake.admins.add(`${GROUP.id}:${BO.id}`);
      try {
        expect(await ask(BO, '/fix 1 Ana leads on every route', GROUP)).toBe('Corrected: Ana leads on every route (was: Ana leads on the hard routes)');
      } finally {
        fake.admins.delete(`${GROUP.id}:${BO.id}`);
      }
      // The subject stays Ana: the new version is still about her.
      const current = await core.db.prisma.memory.findFirstOrThrow({
        where: { scopeId: scope.id, active: true, validTo: null, content: { contains: 'every route' } },
      });
      expect(current.subjectId).toBe(String(ANA.id));
    },
    TIMEOUT,
  );

  it(
    'PATCH /scopes/:id/memories/:mid: corrects and pins as the operator; another scope 404; a bad body 400 naming the field',
    async () => {
      const key = encodeURIComponent(`telegram:private:${ANA.id}`);
      const viola = ids.viola!;
      const corrected = await api('PATCH', `/scopes/${key}/memories/${viola}`, { content: 'Ana plays the viola in an orchestra', pinned: true });
      expect(corrected.status).toBe(200);
      const memory = corrected.json.memory as { id: string; content: string; pinned: boolean; active: boolean };
      expect(memory).toMatchObject({ content: 'Ana plays the viola in an orchestra', pinned: true, active: true });
      const audit = await core.db.prisma.auditEvent.findMany({ where: { scopeId: anaScope, subjectId: memory.id, action: { in: ['correct', 'pin'] } } });
      expect(audit.map((a) => [a.action, a.reason]).sort()).toEqual([
        ['correct', 'corrected by the operator (the admin API)'],
        ['pin', 'pinned by the operator (the admin API)'],
      ]);

      // A faded memory is corrected too: the new version is current.
      const faded = await remember(anaScope, 'Ana swims on Tuesdays', 0.6);
      await core.db.prisma.$transaction((tx) => decayMemory(tx, anaScope, faded, 0.05, { now: new Date(), reason: 'test: faded' }));
      const revived = await api('PATCH', `/scopes/${key}/memories/${faded}`, { content: 'Ana swims on Thursdays' });
      expect({ status: revived.status, memory: revived.json.memory }).toMatchObject({
        status: 200,
        memory: { content: 'Ana swims on Thursdays', active: true },
      });

      // Bo's scope, Ana's memory: not found, and nothing of hers in the answer.
      expect(await ask(BO, 'hello')).toBe('Noted.');
      const other = await api('PATCH', `/scopes/${encodeURIComponent(`telegram:private:${BO.id}`)}/memories/${memory.id}`, { pinned: false });
      expect(other.status).toBe(404);
      expect(JSON.stringify(other.json)).not.toContain('viola');
      expect((await core.db.prisma.memory.findUniqueOrThrow({ where: { id: memory.id } })).pinned).toBe(true);

      const before = await state(anaScope);
      const bad = {
        pinned: await api('PATCH', `/scopes/${key}/memories/${memory.id}`, { pinned: 'yes' }),
        nothing: await api('PATCH', `/scopes/${key}/memories/${memory.id}`, {}),
        unknown: await api('PATCH', `/scopes/${key}/memories/${memory.id}`, { contents: 'typo' }),
        empty: await api('PATCH', `/scopes/${key}/memories/${memory.id}`, { content: '   ' }),
        superseded: await api('PATCH', `/scopes/${key}/memories/${viola}`, { content: 'Ana plays the cello' }),
      };
      figures.push(
        `bad PATCH bodies: ${Object.entries(bad)
          .map(([k, r]) => `${k} ${r.status}`)
          .join(', ')}`,
      );
      expect(Object.fromEntries(Object.entries(bad).map(([k, r]) => [k, r.status]))).toEqual({
        pinned: 400,
        nothing: 400,
        unknown: 400,
        empty: 400,
        superseded: 400,
      });
      expect(bad.pinned.json.detail).toMatch(/^pinned: /);
      expect(bad.nothing.json.detail).toMatch(/^content: give content, pinned or both/);
      expect(bad.empty.json.error).toBe('The new text is empty: write what is true instead');
      expect(await state(anaScope)).toBe(before);
    },
    TIMEOUT,
  );
});
