/**
 * The memory commands end to end (real grammY against the loopback Bot API, real SQLite,
 * full-text index and sqlite-vec): /memories paged with buttons and filtered by category,
 * /forget by number (from /memories or the latest digest) and by words with a confirmation —
 * leaving no row, no full-text hit and no vector — /why, /digest, /export, /pause, /resume, /sleep.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { buildDigest, markSent } from '../../src/memory/digests/digest';
import type { SentMessage } from '../doubles/telegram-server';
import { ANA, BEN, converse, startHarness, textsIn, type Harness } from './telegram-harness';

describe('Telegram memory commands', () => {
  let h: Harness;
  let ana: string;
  let ben: string;
  const ids: Record<string, string> = {};

  const buttons = (message: SentMessage) =>
    (message.reply_markup?.inline_keyboard ?? []).flat().map((b) => ('callback_data' in b ? `${b.text}=${b.callback_data}` : b.text));
  const lastSent = () => h.fake.sent(ANA.id)[h.fake.sent(ANA.id).length - 1]!;

  async function press(message: SentMessage, data: string): Promise<SentMessage> {
    const edits = message.edits;
    h.fake.press(ANA, message, data);
    await h.fake.waitFor(() => message.edits > edits, 5_000, `the edit after pressing ${data}`);
    return message;
  }

  async function memoryTraces(scopeId: string, words: string) {
    await h.core.embeddingWorker.drain();
    return {
      rows: await h.core.db.prisma.memory.count({ where: { scopeId, content: { contains: words } } }),
      fullText: (await h.core.fullText.search({ scopeId, kind: 'memory', query: words, limit: 20 })).length,
      vectors: await h.core.vectorIndex.count(scopeId, 'memory'),
    };
  }

  beforeAll(async () => {
    h = await startHarness();
    // The scopes come into being the way they do in use: a first message.
    await converse(h.fake, ANA, 'I went to the zoo and saw porcelain flamingos');
    await converse(h.fake, BEN, 'hello');
    const prisma = h.core.db.prisma;
    ana = (await prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
    ben = (await prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${BEN.id}` } })).id;
    const zoo = await prisma.episode.findFirstOrThrow({ where: { scopeId: ana } });
    const now = new Date();
    await prisma.$transaction(async (tx) => {
      for (let i = 0; i < 12; i++)
        ids[`pref${i}`] = (
          await createMemory(
            tx,
            { scopeId: ana, category: 'preference', content: `Ana prefers tea blend number ${i}`, confidence: 0.95 - i * 0.01 },
            { by: 'owner', now },
          )
        ).id;
      for (let i = 0; i < 6; i++)
        ids[`rel${i}`] = (
          await createMemory(
            tx,
            { scopeId: ana, category: 'relationship', content: `Ana has a cousin called Person${i}`, confidence: 0.8 - i * 0.01 },
            { by: 'owner', now },
          )
        ).id;
      ids.flamingo = (
        await createMemory(
          tx,
          { scopeId: ana, category: 'interest', content: 'Ana collects porcelain flamingos', confidence: 0.7, sourceEpisodeIds: [zoo.id] },
          { now },
        )
      ).id;
      ids.flamingo2 = (
        await createMemory(
          tx,
          { scopeId: ana, category: 'interest', content: 'Ana wants more porcelain flamingos for the hall', confidence: 0.69 },
          { by: 'owner', now },
        )
      ).id;
      ids.jazz = (
        await createMemory(tx, { scopeId: ana, category: 'interest', content: 'Ana listens to jazz on Sundays', confidence: 0.68 }, { by: 'owner', now })
      ).id;
      ids.ben = (
        await createMemory(tx, { scopeId: ben, category: 'interest', content: 'Ben also collects porcelain flamingos', confidence: 0.9 }, { by: 'owner', now })
      ).id;
    });
    await h.core.embeddingWorker.drain();
  });
  afterAll(async () => h?.close());

  it('pages /memories with Previous/Next buttons, showing number, text, category, confidence and source date', async () => {
    await converse(h.fake, ANA, '/memories');
    const list = lastSent();
    const today = new Date().toISOString().slice(0, 10);
    expect(list.text).toMatch(/^Memories 1–10 of 21 \(page 1\/3\)/);
    expect(list.text).toContain(`1. Ana prefers tea blend number 0\n    preference · confidence 0.95 · from ${today}`);
    expect(list.text).not.toContain('Person0');
    expect(buttons(list)).toEqual([
      'Next »=mem:1:',
      '• all=mem:0:',
      'interest=mem:0:interest',
      'preference=mem:0:preference',
      'relationship=mem:0:relationship',
    ]);

    await press(list, 'mem:1:');
    expect(list.text).toMatch(/^Memories 11–20 of 21 \(page 2\/3\)/);
    expect(list.text).toContain('11. Ana prefers tea blend number 10');
    expect(list.text).toContain('13. Ana has a cousin called Person0');
    expect(buttons(list).slice(0, 2)).toEqual(['« Previous=mem:0:', 'Next »=mem:2:']);

    await press(list, 'mem:2:');
    expect(list.text).toMatch(/^Memories 21–21 of 21 \(page 3\/3\)/);
    expect(list.text).toContain('21. Ana listens to jazz on Sundays');
    expect(buttons(list)[0]).toBe('« Previous=mem:1:');

    await press(list, 'mem:0:interest');
    expect(list.text).toMatch(/^Memories in “interest” 1–3 of 3 \(page 1\/1\)/);
    expect(list.text).toContain('1. Ana collects porcelain flamingos');
    // The source date of a memory with sources is its first episode's day.
    const zoo = await h.core.db.prisma.episode.findFirstOrThrow({ where: { scopeId: ana } });
    expect(list.text).toContain(`interest · confidence 0.70 · from ${zoo.timestamp.toISOString().slice(0, 10)}`);
    expect(buttons(list)).toContain('• interest=mem:0:interest');
    expect(h.fake.calls('answerCallbackQuery').length).toBe(3);
  });

  it('/why N shows the messages a memory came from', async () => {
    const [answer] = await converse(h.fake, ANA, '/why 1');
    expect(answer).toMatch(
      /^1\. Ana collects porcelain flamingos\n\nI learned it from this message:\n• \d{4}-\d\d-\d\d \d\d:\d\d, Ana: “I went to the zoo and saw porcelain flamingos”$/,
    );
    expect((await converse(h.fake, ANA, '/why 2'))[0]).toMatch(/I have no record of the messages behind it/);
    expect((await converse(h.fake, ANA, '/why 9'))[0]).toBe('There is no number 9 in the last /memories list you saw (it showed 1–3).');
  });

  it('/forget N forgets that item of the last /memories list after Forget: no row, no full-text hit, one vector fewer', async () => {
    await converse(h.fake, ANA, '/memories relationship');
    expect(lastSent().text).toContain('2. Ana has a cousin called Person1');
    const before = await memoryTraces(ana, 'Person1');
    expect(before).toMatchObject({ rows: 1, fullText: 1 });

    await converse(h.fake, ANA, '/forget 2');
    const question = lastSent();
    expect(question.text).toBe('Item 2 of the last /memories list you saw:\n\n• Ana has a cousin called Person1\n\nForget it?');
    await press(question, buttons(question)[0]!.split('=')[1]!);
    expect(question.text).toBe('Done: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.');
    const after = await memoryTraces(ana, 'Person1');
    expect(after).toEqual({ rows: 0, fullText: 0, vectors: before.vectors - 1 });
    expect(await h.core.db.prisma.memory.count({ where: { id: ids.rel1 } })).toBe(0);
    expect(await h.core.db.prisma.memory.count({ where: { id: ids.rel0 } })).toBe(1);
    expect((await converse(h.fake, ANA, '/forget 2'))[0]).toBe('Item 2 is already forgotten.');
  });

  it('/forget words shows what matches and forgets only after the button, only in this scope', async () => {
    const before = await memoryTraces(ana, 'flamingos');
    expect(before).toMatchObject({ rows: 2, fullText: 2 });
    await converse(h.fake, ANA, '/forget porcelain flamingos');
    const question = lastSent();
    expect(question.text).toBe(
      'These 2 memories mention “porcelain flamingos”:\n\n• Ana collects porcelain flamingos\n• Ana wants more porcelain flamingos for the hall\n\n1 message of our conversations goes with it; its text will be replaced by a placeholder.\n\nForget them?',
    );
    const [yes, no] = buttons(question);
    expect(yes).toMatch(/^Forget all 2=fg:y:/);
    expect(no).toMatch(/^Keep=fg:n:/);
    // Nothing is gone before the press.
    expect((await memoryTraces(ana, 'flamingos')).rows).toBe(2);

    await press(question, yes!.split('=')[1]!);
    expect(question.text).toBe(
      'Done: I forgot 2 memories. They are gone from my memory, my search index and my notes about you. Also changed: 1 message (replaced by a placeholder).',
    );
    expect(question.reply_markup).toBeUndefined();
    expect(await memoryTraces(ana, 'flamingos')).toEqual({ rows: 0, fullText: 0, vectors: before.vectors - 2 });
    // Ben's scope is untouched.
    expect(await h.core.db.prisma.memory.count({ where: { id: ids.ben } })).toBe(1);
    expect((await h.core.fullText.search({ scopeId: ben, kind: 'memory', query: 'flamingos', limit: 5 })).length).toBe(1);
  });

  it('/forget words lists every version of a matched memory, and Forget removes exactly what was listed', async () => {
    const prisma = h.core.db.prisma;
    const now = new Date();
    const { coffee, latte } = await prisma.$transaction(async (tx) => {
      const coffee = (
        await createMemory(
          tx,
          { scopeId: ana, category: 'preference', content: 'Ana drinks black coffee', confidence: 0.9 },
          { now: new Date(now.getTime() - 60_000), by: 'owner' },
        )
      ).id;
      const latte = (await supersedeMemory(tx, ana, coffee, { content: 'Ana switched to oat milk lattes' }, { now, reason: 'changed her mind', by: 'owner' }))
        .current.id;
      return { coffee, latte };
    });
    await converse(h.fake, ANA, '/forget black coffee');
    const question = lastSent();
    // The current version does not hold the words, but it goes with its chain: so it is shown.
    expect(question.text).toContain('• Ana drinks black coffee (earlier version)');
    expect(question.text).toContain('• Ana switched to oat milk lattes');
    const [yes] = buttons(question);
    expect(yes).toMatch(/^Forget all 2=fg:y:/);
    await press(question, yes!.split('=')[1]!);
    expect(question.text).toMatch(/^Done: I forgot 2 memories\./);
    expect(await prisma.memory.count({ where: { id: { in: [coffee, latte] } } })).toBe(0);
  });

  it('/forget words then Keep forgets nothing; an unknown word matches nothing', async () => {
    await converse(h.fake, ANA, '/forget jazz');
    const question = lastSent();
    expect(question.text).toContain('• Ana listens to jazz on Sundays');
    await press(question, buttons(question)[1]!.split('=')[1]!);
    expect(question.text).toBe('Kept: I forgot nothing.');
    expect(await h.core.db.prisma.memory.count({ where: { id: ids.jazz } })).toBe(1);
    expect(await converse(h.fake, ANA, '/forget zeppelins')).toEqual(['Nothing I remember mentions “zeppelins”.']);
    expect((await converse(h.fake, ANA, '/forget'))[0]).toMatch(/^Tell me what to forget/);
  });

  it('/forget N after a digest forgets that item of the digest', async () => {
    const now = new Date();
    const digest = await buildDigest(h.core.db.prisma, ana, { periodEnd: now, now });
    await markSent(h.core.db.prisma, digest.id, new Date(now.getTime() + 1000));
    const items = digest.items as Array<{ n: number; memoryId: string; text: string }>;
    const jazzItem = items.find((i) => i.memoryId === ids.jazz)!;
    await converse(h.fake, ANA, `/forget ${jazzItem.n}`);
    const question = lastSent();
    expect(question.text).toBe(`Item ${jazzItem.n} of your latest digest:\n\n• Ana listens to jazz on Sundays\n\nForget it?`);
    await press(question, buttons(question)[0]!.split('=')[1]!);
    expect(question.text).toBe('Done: I forgot 1 memory. It is gone from my memory, my search index and my notes about you.');
    expect(await memoryTraces(ana, 'jazz')).toMatchObject({ rows: 0, fullText: 0 });
    const scrubbed = await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } });
    expect(scrubbed.content).not.toContain('jazz');
  });

  it('/digest sends what was learned since the last digest, once', async () => {
    await h.core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId: ana, category: 'goal', content: 'Ana wants to learn the cello', confidence: 0.9 }, { by: 'owner', now: new Date() }),
    );
    const [digest] = await converse(h.fake, ANA, '/digest');
    expect(digest).toMatch(/^What I learned \(/);
    expect(digest).toContain('1. Ana wants to learn the cello');
    expect(digest).not.toContain('#');
    // The fake Bot API has the message before the bot has its answer and records it as sent.
    const latest = async () => (await h.core.db.prisma.digest.findMany({ where: { scopeId: ana }, orderBy: { periodEnd: 'desc' }, take: 1 }))[0];
    for (let waited = 0; (await latest())?.status === 'sending' && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    expect(await latest()).toMatchObject({ status: 'sent', attempts: 1 });
    expect(await converse(h.fake, ANA, '/digest')).toEqual([expect.stringMatching(/^Nothing new since your last digest/)]);
  });

  it('/export sends the JSON export and a Markdown file as documents', async () => {
    const before = h.fake.sent(ANA.id).length;
    h.fake.message(ANA, '/export');
    await h.fake.waitFor(() => h.fake.sent(ANA.id).length === before + 2, 5_000, 'two documents');
    const [json, markdown] = h.fake.sent(ANA.id).slice(before);
    expect(json!.document!.filename).toBe(`nocturne-telegram-private-${ANA.id}.json`);
    const doc = JSON.parse(json!.document!.content.toString('utf8')) as { format: string; scope: { key: string }; memories: Array<{ content: string }> };
    expect(doc.format).toBe('nocturne.scope-export');
    expect(doc.scope.key).toBe(`telegram:private:${ANA.id}`);
    expect(doc.memories.map((m) => m.content)).toContain('Ana wants to learn the cello');
    expect(JSON.stringify(doc)).not.toContain('Ben also collects');
    expect(markdown!.document!.filename).toBe(`nocturne-telegram-private-${ANA.id}.md`);
    expect(markdown!.document!.content.toString('utf8')).toContain('Ana wants to learn the cello');
    expect(markdown!.caption).toMatch(/to read/);
  });

  it('/pause, /sleep while paused, /resume', async () => {
    expect((await converse(h.fake, ANA, '/pause'))[0]).toMatch(/^Paused:/);
    expect((await h.core.db.prisma.scope.findUniqueOrThrow({ where: { id: ana } })).paused).toBe(true);
    expect((await converse(h.fake, ANA, '/pause'))[0]).toMatch(/already paused/);
    expect(await converse(h.fake, ANA, '/sleep')).toEqual(['Nothing to do (consolidation is paused for this scope).']);
    expect((await converse(h.fake, ANA, '/resume'))[0]).toMatch(/^Resumed:/);
    expect((await h.core.db.prisma.scope.findUniqueOrThrow({ where: { id: ana } })).paused).toBe(false);
    expect(textsIn(h.fake, BEN.id).some((t) => /Paused/.test(t))).toBe(false);
  });
});
