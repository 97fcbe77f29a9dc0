/**
 * The Telegram bot end to end (real grammY and runner against the loopback Bot API): who may
 * talk to it, the scopes chats map to, the command menu, media, long replies.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { refusalText, GROUPS_OFF_TEXT } from '../../src/channels/telegram/access-gate';
import { BOT_COMMANDS } from '../../src/channels/telegram/help-commands';
import { ANA, BEN, converse, startHarness, STRANGER, textsIn, type Harness } from './telegram-harness';

describe('Telegram bot: access, scopes and messages', () => {
  let h: Harness;
  const GROUP = { id: -100200300, type: 'supergroup' as const, title: 'Book club' };

  beforeAll(async () => {
    h = await startHarness({ groups: true });
  });
  afterAll(async () => h?.close());

  it('checks the token, removes the webhook and registers the command menu at start', async () => {
    await h.fake.waitFor(() => h.fake.calls('getUpdates').length > 0, 5_000, 'the first poll');
    const methods = h.fake.calls().map((c) => c.method);
    expect(methods.slice(0, 3)).toEqual(['getMe', 'deleteWebhook', 'setMyCommands']);
    const commands = h.fake.calls('setMyCommands')[0]!.payload.commands as Array<{ command: string }>;
    expect(commands.map((c) => c.command).sort()).toEqual([
      'digest',
      'end',
      'export',
      'fix',
      'forget',
      'help',
      'keep',
      'link',
      'memories',
      'memory',
      'pause',
      'pin',
      'reminders',
      'resume',
      'settings',
      'sleep',
      'start',
      'timezone',
      'unlink',
      'unpin',
      'web',
      'why',
    ]);
    expect(commands).toEqual(BOT_COMMANDS);
    expect(h.fake.calls('getUpdates')[0]!.payload).toMatchObject({ timeout: 1, allowed_updates: ['message', 'edited_message', 'callback_query'] });
  });

  it('refuses a stranger once, politely, and stores nothing of theirs', async () => {
    h.fake.message(STRANGER, 'hi, remember that my password is hunter2');
    await h.fake.waitFor(() => h.fake.sent(STRANGER.id).length === 1, 5_000, 'the refusal');
    h.fake.message(STRANGER, '/memories');
    h.fake.message(STRANGER, 'hello??');
    const pressed = h.fake.press(STRANGER, h.fake.sent(STRANGER.id)[0]!, 'mem:0:');
    // Ana's message after the stranger's proves the stranger's later updates were handled (and ignored).
    await converse(h.fake, ANA, 'ping');
    await h.fake.waitFor(
      () => h.fake.calls('answerCallbackQuery').some((c) => c.payload.callback_query_id === pressed.callback_query.id),
      5_000,
      'the callback answer',
    );

    expect(textsIn(h.fake, STRANGER.id)).toEqual([refusalText(STRANGER.id)]);
    expect(refusalText(STRANGER.id)).toContain(String(STRANGER.id));
    expect(h.handler.seen.filter((m) => m.authorId === String(STRANGER.id))).toEqual([]);
    const prisma = h.core.db.prisma;
    expect(await prisma.scope.count({ where: { key: { contains: String(STRANGER.id) } } })).toBe(0);
    expect(await prisma.episode.count({ where: { content: { contains: 'hunter2' } } })).toBe(0);
  });

  it('gives each private chat its own scope with its owner, and a group its own shared one', async () => {
    expect(await converse(h.fake, ANA, 'I love jazz')).toEqual(['you said: I love jazz']);
    expect(await converse(h.fake, BEN, 'I hate jazz')).toEqual(['you said: I hate jazz']);
    h.fake.message(ANA, '@nocturne_test_bot group talk about books', { chat: GROUP });
    await h.fake.waitFor(() => h.fake.sent(GROUP.id).length === 1, 5_000, 'the group reply');
    // In a group the reply quotes the message it answers.
    expect(h.fake.sent(GROUP.id)[0]!.replyTo).toBeDefined();

    const scopes = await h.core.db.prisma.scope.findMany({ where: { channel: 'telegram' }, orderBy: { key: 'asc' } });
    expect(scopes.map((s) => [s.key, s.kind, s.ownerId])).toEqual([
      [`telegram:group:${GROUP.id}`, 'group', null],
      [`telegram:private:${ANA.id}`, 'private', String(ANA.id)],
      [`telegram:private:${BEN.id}`, 'private', String(BEN.id)],
    ]);
    const groupScope = scopes[0]!;
    const anaScope = scopes[1]!;
    const inGroup = await h.core.db.prisma.episode.findMany({ where: { scopeId: groupScope.id } });
    expect(inGroup.map((e) => e.content)).toEqual(['@nocturne_test_bot group talk about books']);
    const anaEpisodes = await h.core.db.prisma.episode.findMany({ where: { scopeId: anaScope.id } });
    expect(anaEpisodes.map((e) => e.content)).not.toContain('@nocturne_test_bot group talk about books');
    expect(h.handler.seen.find((m) => m.text === '@nocturne_test_bot group talk about books')).toMatchObject({
      scopeKey: `telegram:group:${GROUP.id}`,
      scopeKind: 'group',
      authorId: String(ANA.id),
      authorName: 'Ana',
    });
  });

  it('handles a photo with a caption, a voice message, a sticker and a file as what they are', async () => {
    const before = h.handler.seen.length;
    h.fake.media(ANA, {
      photo: [
        { file_id: 'p1', file_unique_id: 'u1', width: 90, height: 90, file_size: 1200 },
        { file_id: 'p2', file_unique_id: 'u2', width: 1280, height: 960, file_size: 154_000 },
      ],
      caption: 'my new flat',
    });
    h.fake.media(ANA, { voice: { file_id: 'v', file_unique_id: 'v', duration: 7, mime_type: 'audio/ogg', file_size: 9000 } });
    h.fake.media(ANA, {
      sticker: { file_id: 's', file_unique_id: 's', type: 'regular', width: 512, height: 512, is_animated: false, is_video: false, emoji: '😀' },
    });
    h.fake.media(ANA, { document: { file_id: 'd', file_unique_id: 'd', file_name: 'report.pdf', mime_type: 'application/pdf', file_size: 52_000 } });
    await h.fake.waitFor(() => h.handler.seen.length === before + 4, 5_000, 'four media messages');
    const seen = h.handler.seen.slice(before);
    expect(seen.map((m) => m.text)).toEqual(['[photo] my new flat', '[voice 0:07]', '[sticker 😀]', '[document report.pdf]']);
    expect(seen.map((m) => m.attachments)).toEqual([
      [{ kind: 'photo', mime: 'image/jpeg', size: 154_000 }],
      [{ kind: 'voice', mime: 'audio/ogg', size: 9000, durationSeconds: 7 }],
      [{ kind: 'sticker', name: '😀' }],
      [{ kind: 'document', name: 'report.pdf', mime: 'application/pdf', size: 52_000 }],
    ]);
    await h.fake.waitFor(() => textsIn(h.fake, ANA.id).includes('you said: [document report.pdf]'), 5_000, 'the replies');
    expect(textsIn(h.fake, ANA.id)).toContain('you said: [photo] my new flat');
    const photo = await h.core.db.prisma.episode.findFirstOrThrow({ where: { content: '[photo] my new flat' } });
    expect(photo.metadata).toMatchObject({ attachments: [{ kind: 'photo', size: 154_000 }] });
  });

  it('splits a reply longer than 4,096 characters on paragraph boundaries, in order, as plain text', async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1}: ${'<b>not bold</b> & so on. '.repeat(12).trim()}`);
    h.handler.answer = (m) => (m.text === 'tell me a long story' ? paragraphs.join('\n\n') : `you said: ${m.text}`);
    const before = h.fake.sent(ANA.id).length;
    h.fake.message(ANA, 'tell me a long story');
    await h.fake.waitFor(() => h.fake.sent(ANA.id).length >= before + 3, 5_000, 'the parts');
    await new Promise((r) => setTimeout(r, 100));
    const parts = h.fake.sent(ANA.id).slice(before);
    expect(parts.length).toBe(Math.ceil(paragraphs.join('\n\n').length / 4096));
    for (const part of parts) {
      expect(part.text!.length).toBeLessThanOrEqual(4096);
      expect(part.text).toMatch(/^Paragraph \d+:/);
      expect(part.text).toMatch(/so on\.$/);
    }
    expect(parts.map((p) => p.text).join('\n\n')).toBe(paragraphs.join('\n\n'));
    const calls = h.fake.calls('sendMessage').filter((c) => String(c.payload.text).startsWith('Paragraph'));
    expect(calls.every((c) => c.payload.parse_mode === undefined)).toBe(true);
    h.handler.answer = (m) => `you said: ${m.text}`;
  });

  it('answers /start, /help, /end and an unknown command without asking the model', async () => {
    const seen = h.handler.seen.length;
    expect((await converse(h.fake, ANA, '/start'))[0]).toMatch(/^Hello, Ana!/);
    expect((await converse(h.fake, ANA, '/help'))[0]).toContain('/forget — Forget something');
    expect(await converse(h.fake, ANA, '/end')).toEqual([expect.stringMatching(/^Conversation ended/)]);
    expect(h.handler.ended).toEqual([`telegram:private:${ANA.id}`]);
    expect(await converse(h.fake, ANA, '/frobnicate now')).toEqual(['I do not know /frobnicate. /help lists what I understand.']);
    expect(h.handler.seen.length).toBe(seen);
  });

  it('keeps the bot token out of every log line', () => {
    const logs = h.logLines().join('\n');
    expect(logs).toContain('Telegram bot started');
    expect(logs).not.toContain(h.fake.token);
    expect(logs).not.toContain(h.fake.token.split(':')[1]!);
  });
});

describe('Telegram bot with groups off (the default)', () => {
  let h: Harness;
  const GROUP = { id: -100999, type: 'group' as const, title: 'Family' };

  beforeAll(async () => {
    h = await startHarness({ groups: false });
  });
  afterAll(async () => h?.close());

  it('says once that it only talks in private chats, stores nothing, and still answers in private', async () => {
    h.fake.message(ANA, 'hello group', { chat: GROUP });
    h.fake.message(BEN, 'hello again group', { chat: GROUP });
    expect(await converse(h.fake, ANA, 'hello in private')).toEqual(['you said: hello in private']);
    await new Promise((r) => setTimeout(r, 50));
    expect(textsIn(h.fake, GROUP.id)).toEqual([GROUPS_OFF_TEXT]);
    expect(await h.core.db.prisma.scope.count({ where: { kind: 'group' } })).toBe(0);
    expect(h.handler.seen.map((m) => m.text)).toEqual(['hello in private']);
  });
});
