/**
 * A person sets their digest through the real channel (grammY against the loopback Bot API) and
 * receives it on time: `/timezone Europe/Madrid`, `/digest at 21:30`, the scheduler's digest check
 * run at its cron's minutes on a controlled clock, and the digest reaching the Bot API double
 * within a minute of 21:30 in Madrid; `/digest off` stops it. Also: a first digest covers
 * everything learned so far, `/digest` after a forget says so, and groups are not promised an
 * evening digest.
 *
 * With DIGEST_TRANSCRIPT=<file> the first test writes the exchange there (for the closing note).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cron } from 'croner';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { formatLocalMinute } from '../../src/memory/digests/digest';
import { instantOf } from '../../src/shared/local-time';
import { startDigestSender } from '../../src/service';
import { ANA, BEN, converse, startHarness, textsIn, type Harness } from './telegram-harness';

const MADRID = 'Europe/Madrid';

describe('digest time and time zone, set in the chat', () => {
  let h: Harness;
  let now: Date;
  let sender: { stop(): Promise<void> };
  const transcript: string[] = [];
  const _GROUP = { id: -100888, type: 'group' as const, title: 'Choir' };

  /** 21:30 (or `hh:mm`) in Madrid on the local date `day` days after the first simulated day. */
  let firstDay: { year: number; month: number; day: number };
  const madrid = (day: number, hour: number, minute: number) => instantOf({ ...firstDay, day: firstDay.day + day, hour, minute }, MADRID);

  const digestsIn = (chatId: number) => textsIn(h.fake, chatId).filter((t) => t.startsWith('What I learned'));

  async function say(text: string): Promise<string> {
    const [answer] = await converse(h.fake, ANA, text);
    transcript.push(`[${formatLocalMinute(now, MADRID)} Madrid] Ana: ${text}`, `  bot: ${answer!.replace(/\n/g, '\n       ')}`);
    return answer!;
  }

  async function learn(scopeId: string, content: string): Promise<string> {
    const memory = await h.core.db.prisma.$transaction((tx) => createMemory(tx, { scopeId, category: 'fact', content, confidence: 0.9 }, { by: 'owner', now }));
    return memory.id;
  }

  /**
   * Runs the scheduler's digest check at every firing of its cron from `from` to `to` (the clock
   * set to each), and returns the firing after which each new digest message had reached the Bot
   * API double.
   */
  async function runChecks(chatId: number, from: Date, to: Date): Promise<Array<{ at: Date; text: string }>> {
    const cron = new Cron(h.core.config.sleep.digestCheckCron, { timezone: h.core.config.timeZone, paused: true });
    const arrived: Array<{ at: Date; text: string }> = [];
    let seen = digestsIn(chatId).length;
    for (let t = cron.nextRun(new Date(from.getTime() - 1)); t && t.getTime() <= to.getTime(); t = cron.nextRun(t)) {
      now = t;
      await h.core.scheduler.runDigests(t);
      const texts = digestsIn(chatId);
      for (const text of texts.slice(seen)) arrived.push({ at: t, text });
      seen = texts.length;
    }
    cron.stop();
    return arrived;
  }

  beforeAll(async () => {
    // A day after the real clock, so the scope (created on the real clock) exists before it.
    const tomorrow = new Date(Date.now() + 24 * 3_600_000);
    firstDay = { year: tomorrow.getUTCFullYear(), month: tomorrow.getUTCMonth() + 1, day: tomorrow.getUTCDate() };
    now = madrid(0, 18, 0);
    h = await startHarness({ groups: true, clock: () => now });
    // The service's wiring: the sender hears about a digest as soon as the scheduler built it. Its
    // own timer is set to an hour here, so a digest that arrives on time arrived through that.
    sender = await startDigestSender(h.core, h.bot, h.core.logger, { clock: () => now, intervalMs: 3_600_000 });
  });
  afterAll(async () => {
    await sender?.stop();
    await h?.close();
  });

  it('a person sets Europe/Madrid and 21:30; the digest reaches them within a minute of 21:30 Madrid time; /digest off stops it', async () => {
    expect(h.core.config.timeZone).toBe('UTC');
    expect(await say('/timezone')).toMatch(/^Your time zone is UTC \(the default: you have not set one\); it is 17:00 there now\./);
    expect(await say('/timezone Mars/Olympus')).toMatch(/^“Mars\/Olympus” is not a time zone I know\./);
    now = madrid(0, 18, 1);
    expect(await say('/timezone europe/madrid')).toMatch(/^Done: your time zone is now Europe\/Madrid; it is 18:01 there\./);
    const scope = (await h.core.directory.findByKey(`telegram:private:${ANA.id}`))!;
    expect(scope.timezone).toBe(MADRID);

    now = madrid(0, 18, 2);
    const day0 = formatLocalMinute(madrid(0, 21, 30), MADRID).slice(0, 10);
    expect(await say('/digest at 21:30')).toBe(`Done: your digest will come every day at 21:30 (Europe/Madrid). The next one: ${day0} at 21:30.`);

    // Audited, like /pause.
    const audit = await h.core.db.prisma.auditEvent.findMany({ where: { scopeId: scope.id, action: 'settings' }, orderBy: { createdAt: 'asc' } });
    expect(audit.map((e) => e.after)).toEqual([{ timezone: MADRID }, { digestTime: '21:30' }]);

    now = madrid(0, 19, 10);
    await learn(scope.id, 'Ana sings alto in a choir');

    const arrived = await runChecks(ANA.id, madrid(0, 21, 20), madrid(0, 21, 40));
    expect(arrived).toHaveLength(1);
    const due = madrid(0, 21, 30);
    const lateMs = arrived[0]!.at.getTime() - due.getTime();
    expect(lateMs).toBeGreaterThanOrEqual(0);
    expect(lateMs).toBeLessThan(60_000);
    expect(arrived[0]!.text).toContain('Europe/Madrid');
    expect(arrived[0]!.text).toContain('1. Ana sings alto in a choir');
    const row = await h.core.db.prisma.digest.findFirstOrThrow({ where: { scopeId: scope.id, status: 'sent' } });
    expect(row.sentAt!.getTime() - due.getTime()).toBeLessThan(60_000);
    transcript.push(
      `[${formatLocalMinute(arrived[0]!.at, MADRID)} Madrid, digest check at ${arrived[0]!.at.toISOString()}] bot (digest): ${arrived[0]!.text.replace(/\n/g, '\n       ')}`,
    );

    // Off: the next evening passes without a digest, though there is something to tell.
    now = madrid(1, 9, 0);
    expect(await say('/digest off')).toBe('Done: no more evening digests. /digest still shows what I learned whenever you ask; /digest on starts them again.');
    await learn(scope.id, 'Ana bought a metronome');
    expect(await runChecks(ANA.id, madrid(1, 21, 20), madrid(1, 21, 40))).toEqual([]);
    expect(await h.core.db.prisma.digest.count({ where: { scopeId: scope.id } })).toBe(1);
    transcript.push(
      `[${formatLocalMinute(madrid(1, 21, 20), MADRID)}–${formatLocalMinute(madrid(1, 21, 40), MADRID).slice(11)} Madrid] (a digest check every minute: nothing sent)`,
    );

    // On again: the following evening it comes, with what was learned while it was off.
    now = madrid(2, 9, 0);
    expect(await say('/digest on')).toMatch(/^Done: your digest will come every day at 21:30 \(Europe\/Madrid\)\. The next one: .* at 21:30\.$/);
    const again = await runChecks(ANA.id, madrid(2, 21, 25), madrid(2, 21, 35));
    expect(again.map((a) => a.at)).toEqual([madrid(2, 21, 30)]);
    expect(again[0]!.text).toContain('Ana bought a metronome');
    transcript.push(
      `[${formatLocalMinute(again[0]!.at, MADRID)} Madrid, digest check at ${again[0]!.at.toISOString()}] bot (digest): ${again[0]!.text.replace(/\n/g, '\n       ')}`,
    );

    if (process.env.DIGEST_TRANSCRIPT) fs.writeFileSync(process.env.DIGEST_TRANSCRIPT, `${transcript.join('\n')}\n`);
  });

  it('a time set after it has passed today applies from tomorrow, and the first digest covers everything learned so far', async () => {
    now = madrid(3, 8, 0);
    await converse(h.fake, BEN, 'hello');
    const ben = (await h.core.directory.findByKey(`telegram:private:${BEN.id}`))!;
    // The default evening (21:00 UTC) passes with nothing learned: an empty digest is stored.
    await runChecks(
      BEN.id,
      instantOf({ ...firstDay, day: firstDay.day + 3, hour: 21, minute: 0 }, 'UTC'),
      instantOf({ ...firstDay, day: firstDay.day + 3, hour: 21, minute: 1 }, 'UTC'),
    );
    expect(await h.core.db.prisma.digest.findMany({ where: { scopeId: ben.id }, select: { status: true } })).toEqual([{ status: 'empty' }]);
    // Learning recorded at a consolidation's start, before that empty digest's end (the run was
    // still going when the digest was checked).
    now = instantOf({ ...firstDay, day: firstDay.day + 3, hour: 20, minute: 59 }, 'UTC');
    await learn(ben.id, 'Ben plays the tuba');

    now = instantOf({ ...firstDay, day: firstDay.day + 3, hour: 22, minute: 0 }, 'UTC');
    const [answer] = await converse(h.fake, BEN, '/digest at 21:30');
    expect(answer).toContain('every day at 21:30 (UTC)');
    expect(answer).toContain(
      `The next one: ${formatLocalMinute(instantOf({ ...firstDay, day: firstDay.day + 4, hour: 21, minute: 30 }, 'UTC'), 'UTC').slice(0, 10)} at 21:30.`,
    );
    expect(answer).toContain('/timezone');
    // Not at once for a 21:30 that had passed when it was set...
    expect(await runChecks(BEN.id, now, new Date(now.getTime() + 10 * 60_000))).toEqual([]);
    // ...but the next evening, with everything learned so far.
    const day4 = (h: number, m: number) => instantOf({ ...firstDay, day: firstDay.day + 4, hour: h, minute: m }, 'UTC');
    const arrived = await runChecks(BEN.id, day4(21, 25), day4(21, 35));
    expect(arrived.map((a) => a.at)).toEqual([day4(21, 30)]);
    expect(arrived[0]!.text).toContain('1. Ben plays the tuba');
  });
});

describe('digests on the real clock: after a forget, and in groups', () => {
  let h: Harness;
  const GROUP = { id: -100888, type: 'group' as const, title: 'Choir' };
  beforeAll(async () => {
    h = await startHarness({ groups: true });
  });
  afterAll(async () => h?.close());

  it('/digest right after a forget says that something was forgotten, without its text', async () => {
    await converse(h.fake, ANA, 'hello');
    const scope = (await h.core.directory.findByKey(`telegram:private:${ANA.id}`))!;
    const memory = await h.core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId: scope.id, category: 'fact', content: 'Ana collects porcelain flamingos', confidence: 0.9 }, { by: 'owner', now: new Date() }),
    );
    const id = memory.id;
    expect(await converse(h.fake, ANA, '/digest')).toEqual([expect.stringContaining('1. Ana collects porcelain flamingos')]);
    await h.core.forget.forgetMemory(scope.id, id, { reason: 'test' });
    const [answer] = await converse(h.fake, ANA, '/digest');
    expect(answer).not.toMatch(/have not .*forgotten/);
    expect(answer).toContain('Forgotten at your request: 1 memory');
    expect(answer).not.toContain('flamingo');
  });

  it('groups are not promised an evening digest, and are told where digests go', async () => {
    h.fake.message(ANA, '/start', { chat: GROUP });
    await h.fake.waitFor(() => h.fake.sent(GROUP.id).length === 1);
    const start = textsIn(h.fake, GROUP.id)[0]!;
    expect(start).not.toMatch(/Each evening I send you a digest/);
    expect(start).toContain('evening digests go to private chats only');
    h.fake.message(ANA, '/digest at 21:30', { chat: GROUP });
    await h.fake.waitFor(() => h.fake.sent(GROUP.id).length === 2);
    expect(textsIn(h.fake, GROUP.id)[1]).toBe('Evening digests go to private chats only: here, /digest shows what I learned in this group whenever you ask.');
    // In a private chat the promise stands.
    expect((await converse(h.fake, ANA, '/start'))[0]).toContain('Each evening I send you a digest');
  });
});
