/**
 * A group member who is not on the allowlist, through the real bot against the loopback Bot API
 * on real SQLite: while they talk with the group, the bot stays silent (no refusal naming their
 * user id in front of everyone); only when they address the bot (a mention, a command) are they
 * told, once, why it does not answer. Nothing of theirs is stored either way.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ANA, STRANGER, startHarness, textsIn, type Harness } from './telegram-harness';

describe('Telegram group: someone not on the allowlist', () => {
  let h: Harness;
  const GROUP = { id: -100300999, type: 'supergroup' as const, title: 'Book club' };
  const groupTexts = () => textsIn(h.fake, GROUP.id);

  beforeAll(async () => {
    h = await startHarness({ groups: true, allowedUsers: [ANA.id] });
  });
  afterAll(async () => h?.close());

  it('is not answered for talk among the group; is told once when they address the bot', async () => {
    h.fake.message(STRANGER, 'has everyone finished chapter three?', { chat: GROUP });
    h.fake.message(STRANGER, 'I loved the ending', { chat: GROUP });
    // Updates of a chat are handled in order: once Ana's mention is answered, the stranger's were handled.
    h.fake.message(ANA, '@nocturne_test_bot what are we reading?', { chat: GROUP });
    await h.fake.waitFor(() => groupTexts().some((t) => t.startsWith('you said: @nocturne_test_bot')), 10_000, "the answer to Ana's mention");
    process.stderr.write(`telegram-group-strangers: after talk ${JSON.stringify(groupTexts())}\n`);
    expect(groupTexts()).toEqual(['you said: @nocturne_test_bot what are we reading?']);
    expect(groupTexts().join('\n')).not.toContain(String(STRANGER.id));

    h.fake.message(STRANGER, '@nocturne_test_bot can you summarise chapter three?', { chat: GROUP });
    await h.fake.waitFor(() => groupTexts().length > 1, 10_000, 'the refusal');
    expect(groupTexts()[1]).toMatch(/^Hello! I am a private assistant/);
    const group = await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:group:${GROUP.id}` } });
    const stored = await h.core.db.prisma.episode.findMany({ where: { scopeId: group.id, role: 'user' } });
    expect(stored.map((e) => e.content)).toEqual(['@nocturne_test_bot what are we reading?']);
  }, 60_000);
});
