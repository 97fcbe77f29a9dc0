/**
 * Nightly digest delivery over Telegram (real grammY against the loopback Bot API): delivered
 * once despite a failed first send, never twice (later passes, /digest, two senders at once),
 * bounded attempts, and a digest a crash left mid-send is not resent.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDigestSender } from '../../src/channels/telegram/digest-sender';
import { DIGEST_SENDING } from '../../src/memory/digests/digest-book';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { buildDigest } from '../../src/memory/digests/digest';
import { ANA, BEN, converse, startHarness, textsIn, type Harness } from './telegram-harness';

describe('Telegram digest delivery', () => {
  let h: Harness;
  let ana: string;
  let ben: string;
  const GROUP = { id: -100777, type: 'group' as const, title: 'Choir' };

  /** A new memory in the scope and the digest of the period ending now (pending). */
  async function newDigest(scopeId: string, content: string) {
    const prisma = h.core.db.prisma;
    await prisma.$transaction((tx) => createMemory(tx, { scopeId, category: 'fact', content, confidence: 0.9 }, { by: 'owner', now: new Date() }));
    await new Promise((r) => setTimeout(r, 5));
    const now = new Date();
    return buildDigest(prisma, scopeId, { periodEnd: now, now });
  }

  const digestsIn = (chatId: number) => textsIn(h.fake, chatId).filter((t) => t.startsWith('What I learned'));

  beforeAll(async () => {
    h = await startHarness({ groups: true });
    await converse(h.fake, ANA, 'hello');
    await converse(h.fake, BEN, 'hello');
    h.fake.message(ANA, '@nocturne_test_bot hello choir', { chat: GROUP });
    await h.fake.waitFor(() => h.fake.sent(GROUP.id).length === 1);
    ana = (await h.core.scopes.findByKey(`telegram:private:${ANA.id}`))!.id;
    ben = (await h.core.scopes.findByKey(`telegram:private:${BEN.id}`))!.id;
  });
  afterAll(async () => h?.close());

  it('delivers a digest once to the scope owner despite a failed first send', async () => {
    const digest = await newDigest(ana, 'Ana sings in a choir');
    expect(digest.status).toBe('pending');
    const sender = createDigestSender({ digestBook: h.core.digestBook, logger: h.core.logger, bot: h.bot, intervalMs: 60_000 });
    // Every attempt of the first send fails (5 = the harness's retry attempts per call).
    h.fake.fail('sendMessage', ...Array.from({ length: 5 }, () => ({ kind: 'bad-gateway' as const })));

    expect(await sender.sendPending()).toEqual({ sent: 0, failed: 1, skipped: 0 });
    expect(await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } })).toMatchObject({ status: 'failed', attempts: 1, sentAt: null });
    expect(digestsIn(ANA.id)).toEqual([]);

    expect(await sender.sendPending()).toEqual({ sent: 1, failed: 0, skipped: 0 });
    expect(await sender.sendPending()).toEqual({ sent: 0, failed: 0, skipped: 0 });
    const row = await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } });
    expect(row).toMatchObject({ status: 'sent', attempts: 2 });
    expect(row.sentAt).toBeInstanceOf(Date);
    expect(digestsIn(ANA.id)).toHaveLength(1);
    expect(digestsIn(ANA.id)[0]).toContain('1. Ana sings in a choir');
    expect(digestsIn(ANA.id)[0]).toContain('To make me forget an item, answer /forget and its number');
    // The group scope has no owner: its digest goes nowhere, Ben had nothing to learn.
    expect(digestsIn(GROUP.id)).toEqual([]);
    expect(digestsIn(BEN.id)).toEqual([]);
    // /digest afterwards does not send it again.
    expect(await converse(h.fake, ANA, '/digest')).toEqual([expect.stringMatching(/^Nothing new since your last digest/)]);
  });

  it('never sends a digest twice when two senders run at once', async () => {
    const digest = await newDigest(ana, 'Ana bought a metronome');
    const a = createDigestSender({ digestBook: h.core.digestBook, logger: h.core.logger, bot: h.bot });
    const b = createDigestSender({ digestBook: h.core.digestBook, logger: h.core.logger, bot: h.bot });
    const [ra, rb] = await Promise.all([a.sendPending(), b.sendPending()]);
    expect(ra.sent + rb.sent).toBe(1);
    expect(digestsIn(ANA.id).filter((t) => t.includes('metronome'))).toHaveLength(1);
    expect((await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } })).status).toBe('sent');
  });

  it('stops retrying after the attempts run out', async () => {
    const digest = await newDigest(ben, 'Ben plays the tuba');
    const sender = createDigestSender({ digestBook: h.core.digestBook, logger: h.core.logger, bot: h.bot, maxAttempts: 2 });
    // Two passes of five failing attempts each.
    h.fake.fail('sendMessage', ...Array.from({ length: 10 }, () => ({ kind: 'bad-gateway' as const })));
    expect((await sender.sendPending()).failed).toBe(1);
    expect((await sender.sendPending()).failed).toBe(1);
    const calls = h.fake.calls('sendMessage').length;
    expect(await sender.sendPending()).toEqual({ sent: 0, failed: 0, skipped: 0 });
    expect(h.fake.calls('sendMessage').length).toBe(calls);
    expect(await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } })).toMatchObject({ status: 'failed', attempts: 2 });
    expect(h.logLines().some((l) => l.includes('will not be tried again'))).toBe(true);
  });

  it('does not resend a digest a crash left mid-send, and says so in the log', async () => {
    const digest = await newDigest(ana, 'Ana learned a new hymn');
    await h.core.db.prisma.digest.update({ where: { id: digest.id }, data: { status: DIGEST_SENDING } });
    const sender = createDigestSender({ digestBook: h.core.digestBook, logger: h.core.logger, bot: h.bot, intervalMs: 60_000 });
    await sender.start();
    await sender.stop();
    expect(await h.core.db.prisma.digest.findUniqueOrThrow({ where: { id: digest.id } })).toMatchObject({ status: 'sent' });
    expect(digestsIn(ANA.id).filter((t) => t.includes('hymn'))).toEqual([]);
    expect(h.logLines().some((l) => l.includes('may or may not have arrived') && l.includes(digest.id))).toBe(true);
  });
});
