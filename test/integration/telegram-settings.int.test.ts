/**
 * `/settings` through the real bot (grammY against the loopback Bot API) on real SQLite: a person
 * reads and changes capped mode, the sleep window and the two daily budgets in a private chat;
 * what the chat sets the CLI (a child process on the same database) reads, and what the CLI sets
 * the chat shows. A bad value changes nothing and says why. In a group anyone may look, only the
 * group's administrators (Telegram's getChatMember) may change. Every change is audited and is
 * what the scope policy resolves from the row at once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { policyDefaults, resolvePolicy } from '../../src/memory/scopes/scope-policy';
import { cleanEnv, runCli } from '../support/run-process';
import { ANA, BEN, converse, startHarness, textsIn, type Harness } from './telegram-harness';

describe('/settings in Telegram', () => {
  let h: Harness;
  let env: NodeJS.ProcessEnv;
  const GROUP = { id: -100500600, type: 'supergroup' as const, title: 'Book club' };
  const PRIVATE_KEY = `telegram:private:${ANA.id}`;
  const GROUP_KEY = `telegram:group:${GROUP.id}`;

  const scopeRow = (key: string) => h.core.db.prisma.scope.findUniqueOrThrow({ where: { key } });
  const policyOf = async (key: string) => resolvePolicy(await scopeRow(key), policyDefaults(h.core.config));
  const audits = async (key: string) => h.core.db.prisma.auditEvent.findMany({ where: { action: 'settings', scope: { key } }, orderBy: { createdAt: 'asc' } });

  /** Sends to the group and returns the bot's answer there. */
  async function inGroup(from: typeof ANA, text: string): Promise<string> {
    const before = textsIn(h.fake, GROUP.id).length;
    h.fake.message(from, text, { chat: GROUP });
    await h.fake.waitFor(() => textsIn(h.fake, GROUP.id).length > before, 10_000, `the answer to "${text}"`);
    return textsIn(h.fake, GROUP.id).at(-1)!;
  }
  const say = async (text: string) => (await converse(h.fake, ANA, text))[0]!;

  beforeAll(async () => {
    h = await startHarness({ groups: true });
    env = cleanEnv({ DATA_DIR: h.core.config.dataDir, TZ: 'UTC' });
  });
  afterAll(async () => h?.close());

  it('is in the command menu and the help', async () => {
    const menus = h.fake.calls('setMyCommands').map((c) => (c.payload as { commands: Array<{ command: string }> }).commands.map((x) => x.command));
    expect(menus.at(-1)).toContain('settings');
    expect(await say('/help')).toContain('/settings');
  });

  it('a person sees and changes each setting in a private chat; the CLI reads it; the CLI’s change shows in the chat', async () => {
    const shown = await say('/settings');
    expect(shown).toContain(`Settings of ${PRIVATE_KEY}:`);
    expect(shown).toContain('• Capped memory: off');
    expect(shown).toContain('• Sleep window: 02:00-06:00 UTC, the default.');
    expect(shown).toContain('• Sleep budget: 200,000 model tokens a day (the default)');
    expect(shown).toContain('• Reply budget: 500 replies a day (the default)');

    expect(await say('/settings capped on')).toContain('• Capped memory: on — I keep at most 10 memories, one per conversation');
    expect(await say('/settings sleep 23:00-07:00')).toContain('• Sleep window: 23:00-07:00 UTC.');
    expect(await say('/settings budget sleep 50,000')).toContain('• Sleep budget: 50,000 model tokens a day');
    expect(await say('/settings budget replies 3')).toContain('• Reply budget: 3 replies a day');
    expect(await policyOf(PRIVATE_KEY)).toMatchObject({
      memoryCap: 10,
      sleepWindow: { startHour: 23, durationHours: 8 },
      dailyTokenBudget: 50_000,
      replyDailyBudget: 3,
      problems: [],
    });
    expect((await audits(PRIVATE_KEY)).map((e) => [e.after, e.reason])).toEqual([
      [{ memoryCap: 10 }, '/settings capped on sent in Telegram'],
      [{ sleepWindow: { startHour: 23, durationHours: 8 } }, '/settings sleep 23:00-07:00 sent in Telegram'],
      [{ dailyTokenBudget: 50_000 }, '/settings budget sleep 50,000 sent in Telegram'],
      [{ replyDailyBudget: 3 }, '/settings budget replies 3 sent in Telegram'],
    ]);

    // Another door, another process, the same database.
    const read = await runCli(['settings', '--scope', PRIVATE_KEY, '--json'], env);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.stdout)).toMatchObject({
      cappedMode: true,
      memoryCap: 10,
      sleepWindow: '23:00-07:00',
      sleepDailyTokenBudget: 50_000,
      replyDailyBudget: 3,
    });
    const changed = await runCli(['settings', '--scope', PRIVATE_KEY, '--capped', 'off', '--reply-budget', 'default'], env);
    expect(changed.code).toBe(0);
    const after = await say('/settings');
    expect(after).toContain('• Capped memory: off');
    expect(after).toContain('• Reply budget: 500 replies a day (the default)');
    expect(after).toContain('• Sleep window: 23:00-07:00 UTC.');
  }, 240_000);

  it('a bad value changes nothing and says why', async () => {
    const before = (await scopeRow(PRIVATE_KEY)).settings;
    const auditsBefore = (await audits(PRIVATE_KEY)).length;
    const refusals: Array<[string, string]> = [
      ['/settings sleep 02:30-05:00', 'Nothing changed: sleep window: "02:30-05:00" does not start and end on the hour'],
      ['/settings sleep 26-3', 'Nothing changed: sleep window: "26-3" names an hour past 24:00'],
      ['/settings sleep', 'Nothing changed: sleep takes a window such as 02:00-06:00, or default.'],
      ['/settings budget replies -2', 'Nothing changed: reply budget: -2 is not a whole number of replies from 0 (unlimited) to 1000000.'],
      ['/settings budget sleep plenty', 'Nothing changed: the sleep budget takes a whole number or default, not “plenty”.'],
      ['/settings budget coffee 3', 'Nothing changed: budget takes sleep or replies, not “coffee”.'],
      ['/settings capped 0', 'Nothing changed: memory cap: 0 is not a whole number from 1 to 100000.'],
      ['/settings colour blue', 'Nothing changed: I do not know the setting “colour”.'],
    ];
    for (const [text, answer] of refusals) expect({ text, answer: await say(text) }).toEqual({ text, answer: expect.stringContaining(answer) });
    expect((await scopeRow(PRIVATE_KEY)).settings).toEqual(before);
    expect(await audits(PRIVATE_KEY)).toHaveLength(auditsBefore);
  }, 120_000);

  it('in a group anyone may look, only an administrator may change', async () => {
    expect(await inGroup(BEN, '/settings')).toContain(`Settings of ${GROUP_KEY}:`);
    expect(await inGroup(BEN, '/settings capped on')).toBe('Only the group’s administrators can change its settings. /settings shows them.');
    expect(await inGroup(BEN, '/settings budget replies 10')).toBe('Only the group’s administrators can change its settings. /settings shows them.');
    expect(await policyOf(GROUP_KEY)).toMatchObject({ memoryCap: undefined, replyDailyBudget: 500 });
    expect(await audits(GROUP_KEY)).toEqual([]);

    h.fake.admins.add(`${GROUP.id}:${ANA.id}`);
    expect(await inGroup(ANA, '/settings budget replies 10')).toContain('• Reply budget: 10 replies a day');
    expect(await inGroup(ANA, '/settings capped 5')).toContain('• Capped memory: on — I keep at most 5 memories');
    expect(await policyOf(GROUP_KEY)).toMatchObject({ memoryCap: 5, replyDailyBudget: 10 });
    expect((await audits(GROUP_KEY)).map((e) => e.reason)).toEqual([
      `/settings budget replies 10 sent in a Telegram group by user ${ANA.id}`,
      `/settings capped 5 sent in a Telegram group by user ${ANA.id}`,
    ]);
    // Promoted is not forever: asked of Telegram at every change.
    h.fake.admins.delete(`${GROUP.id}:${ANA.id}`);
    expect(await inGroup(ANA, '/settings capped off')).toBe('Only the group’s administrators can change its settings. /settings shows them.');
    expect((await policyOf(GROUP_KEY)).memoryCap).toBe(5);
  }, 120_000);
});
