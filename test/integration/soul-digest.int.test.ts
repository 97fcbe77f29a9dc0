/**
 * The soul and the digest on a real SQLite file and a real PostgreSQL database: the soul says
 * only what active, confident memories say and versions only real changes; digests chain their
 * periods, number their items, are built once per period, and are scrubbed when a memory is
 * forgotten; the sender's queue (pending, failed with attempts left, sent).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { contradictMemory, createMemory, decayMemory, forgetMemory, reinforceMemory, supersedeMemory, type Tx } from '../../src/memory/memories/memory-writer';
import { createSilentLogger } from '../../src/shared/logger';
import { buildDigest, digestItem, digestItems, latestDigest, markFailed, markSent, pendingDigests, scrubDigests } from '../../src/memory/digests/digest';
import { regenerateSoul, soulMarkdown } from '../../src/memory/profiles/soul';
import { renderSoul, type SoulMemory } from '../../src/memory/profiles/soul-render';
import { openDatabase, type Database } from '../../src/storage/database';
import { postgresAvailable, postgresDatabase, postgresSkipReason, sqliteDatabase } from '../support/databases';

const HOUR = 3_600_000;
const T0 = new Date('2026-02-01T08:00:00Z');
const at = (hours: number) => new Date(T0.getTime() + hours * HOUR);

describe('renderSoul (pure)', () => {
  const memory = (id: string, category: string, content: string, confidence: number, extra: Partial<SoulMemory> = {}): SoulMemory => ({
    id,
    category,
    content,
    confidence,
    importance: 0.5,
    active: true,
    validFrom: T0,
    validTo: null,
    ...extra,
  });
  const source = {
    name: 'Ana',
    timeZone: 'Europe/Madrid',
    updatedAt: at(1),
    memories: [
      memory('a', 'preference', 'Likes green tea', 0.7),
      memory('b', 'preference', 'Prefers short answers', 0.95),
      memory('c', 'routine', 'Runs every morning at 7', 0.8),
      memory('d', 'relationship', 'Has a sister called Maria', 0.9),
      memory('e', 'skill', 'Speaks Portuguese', 0.6),
      memory('f', 'goal', 'Wants to run a marathon', 0.85),
      memory('g', 'emotional', 'Gets anxious before exams', 0.75),
      memory('h', 'insight', 'Works best in the morning', 0.66),
      memory('i', 'fact', 'Lives in\nValencia', 0.9),
      memory('faded', 'fact', 'Owned a red bicycle', 0.9, { active: false }),
      memory('old', 'preference', 'Likes black coffee', 0.9, { validTo: at(0.5) }),
      memory('weak', 'fact', 'Might play the violin', 0.5),
    ],
    entities: [
      { name: 'Maria', kind: 'person', favorability: 0.8, attributes: { relation: 'sister', 'lives in': 'Lisbon' } },
      { name: 'Rex', kind: 'pet', favorability: 0.5, attributes: null },
      { name: 'Carlos', kind: 'person', favorability: 0.25, attributes: {} },
      { name: 'Old neighbour', kind: 'person', favorability: 0.1, attributes: { street: 'Calle Mayor' } },
      { name: 'Acme', kind: 'organization', favorability: 0.9, attributes: {} },
    ],
  };

  it('groups believed memories into sections, most confident first, each with its confidence', () => {
    const { soul, memoryCount } = renderSoul(source);
    expect(soul.split('\n').slice(0, 3)).toEqual(['# Soul of Ana', '', '_Last updated 2026-02-01 10:00 Europe/Madrid from 9 memories._']);
    expect(memoryCount).toBe(9);
    const sections = soul.split('\n').filter((l) => l.startsWith('## '));
    expect(sections).toEqual([
      '## Preferences',
      '## Schedule and routines',
      '## Relationships',
      '## Interests and skills',
      '## Goals and projects',
      '## Communication style',
      '## Facts',
    ]);
    expect(soul).toContain('## Preferences\n\n- Prefers short answers (0.95)\n- Likes green tea (0.70)\n');
    expect(soul).toContain('## Schedule and routines\n\n- Time zone: Europe/Madrid\n- Runs every morning at 7 (0.80)\n');
    expect(soul).toContain('- Lives in Valencia (0.90)\n- Works best in the morning (0.66)');
    // Nothing that is faded, superseded or not above 0.5 confidence, even when handed in.
    expect(soul).not.toMatch(/bicycle|black coffee|violin/);
  });

  it('adds person and pet profiles with their relationship state and attributes', () => {
    const { soul, data } = renderSoul(source);
    expect(soul).toContain(
      '- Has a sister called Maria (0.90)\n- Maria (person, family, 0.80): lives in: Lisbon; relation: sister\n- Rex (pet, friend, 0.50)\n- Carlos (person, acquaintance, 0.25)\n- Old neighbour (person, stranger, 0.10): street: Calle Mayor\n',
    );
    expect(soul).not.toContain('Acme');
    expect(data.relationships).toHaveLength(5);
    expect(data.relationships[1]).toEqual({
      name: 'Maria',
      kind: 'person',
      state: 'family',
      favorability: 0.8,
      attributes: { 'lives in': 'Lisbon', relation: 'sister' },
    });
    expect(data.schedule).toEqual({
      timeZone: 'Europe/Madrid',
      items: [{ id: 'c', category: 'routine', content: 'Runs every morning at 7', confidence: 0.8 }],
    });
    expect(data.preferences.map((p) => p.id)).toEqual(['b', 'a']);
    expect(data.interests.map((p) => p.id)).toEqual(['e']);
    expect(data.goals.map((p) => p.id)).toEqual(['f']);
    expect(data.style.map((p) => p.id)).toEqual(['g']);
    expect(data.facts.map((p) => p.id)).toEqual(['i', 'h']);
  });

  it('is deterministic, omits empty sections, and says when nothing is known', () => {
    expect(renderSoul(source)).toEqual(renderSoul({ ...source, memories: [...source.memories].reverse(), entities: [...source.entities].reverse() }));
    const empty = renderSoul({ name: 'Ben', timeZone: null, updatedAt: T0, memories: [], entities: [] });
    expect(empty.soul).not.toContain('##');
    expect(empty.soul).toContain('Nothing learned yet');
    expect(empty.memoryCount).toBe(0);
  });
});

function suite(name: string, database: () => Promise<Config['database']>) {
  describe(`soul and digest on ${name}`, () => {
    let db: Database;
    let scopeId: string;
    let otherId: string;
    const tx = <T>(fn: (t: Tx) => Promise<T>) => db.prisma.$transaction(fn);

    beforeAll(async () => {
      db = await openDatabase({ database: await database(), logger: createSilentLogger() });
      scopeId = (
        await db.prisma.scope.create({
          data: { key: 'telegram:private:7', channel: 'telegram', title: 'Ana', ownerId: '7', timezone: 'Europe/Madrid', createdAt: T0 },
        })
      ).id;
      otherId = (await db.prisma.scope.create({ data: { key: 'terminal:ben', channel: 'terminal', createdAt: T0 } })).id;
    });
    afterAll(async () => db?.close());

    describe('soul', () => {
      it('writes no profile while there is nothing to say', async () => {
        const result = await regenerateSoul(db.prisma, scopeId, { now: at(1) });
        expect(result).toMatchObject({ version: 0, changed: false });
        expect(await db.prisma.profile.count({ where: { scopeId } })).toBe(0);
        expect(await soulMarkdown(db.prisma, scopeId)).toBe(
          '# Soul of Ana\n\nNothing learned yet: this fills in once conversations have been consolidated into memories.\n',
        );
      });

      it('is built from active, confident memories and versioned with an audit event without its text', async () => {
        await tx(async (t) => {
          await createMemory(
            t,
            { scopeId, category: 'preference', content: 'Ana drinks green tea every afternoon', confidence: 0.9 },
            { by: 'owner', now: at(2) },
          );
          await createMemory(t, { scopeId, category: 'fact', content: 'Ana works as a nurse', confidence: 0.8 }, { by: 'owner', now: at(2) });
          await createMemory(t, { scopeId, category: 'fact', content: 'Ana may own a kayak', confidence: 0.4 }, { by: 'owner', now: at(2) });
          await createMemory(t, { scopeId: otherId, category: 'fact', content: 'Ben keeps bees', confidence: 0.9 }, { by: 'owner', now: at(2) });
          await t.entity.create({ data: { scopeId, key: 'maria', name: 'Maria', kind: 'person', favorability: 0.6, attributes: { relation: 'sister' } } });
        });
        const result = await regenerateSoul(db.prisma, scopeId, { now: at(3), runId: 'run-1' });
        expect(result).toMatchObject({ version: 1, changed: true });
        expect(result.soul).toContain('## Preferences\n\n- Ana drinks green tea every afternoon (0.90)');
        expect(result.soul).toContain('## Schedule and routines\n\n- Time zone: Europe/Madrid');
        expect(result.soul).toContain('- Maria (person, family, 0.60): relation: sister');
        expect(result.soul).toContain('## Facts\n\n- Ana works as a nurse (0.80)');
        expect(result.soul).not.toMatch(/kayak|bees/);
        const profile = await db.prisma.profile.findUniqueOrThrow({ where: { scopeId } });
        expect(profile).toMatchObject({ soul: result.soul, version: 1 });
        expect((profile.data as { facts: Array<{ content: string }> }).facts.map((f) => f.content)).toEqual(['Ana works as a nurse']);
        const events = await db.prisma.auditEvent.findMany({ where: { scopeId, action: 'soul' } });
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ subjectType: 'profile', runId: 'run-1', after: { version: 1, memories: 2 } });
        expect(await soulMarkdown(db.prisma, scopeId)).toBe(result.soul);
      });

      it('keeps its version (and its text) when nothing changed', async () => {
        const before = await db.prisma.profile.findUniqueOrThrow({ where: { scopeId } });
        const again = await regenerateSoul(db.prisma, scopeId, { now: at(30) });
        expect(again).toEqual({ soul: before.soul, version: 1, changed: false });
        expect(await db.prisma.auditEvent.count({ where: { scopeId, action: 'soul' } })).toBe(1);
      });

      it('follows corrections, reinforcement and fading', async () => {
        const tea = await db.prisma.memory.findFirstOrThrow({ where: { scopeId, content: { contains: 'green tea' } } });
        const nurse = await db.prisma.memory.findFirstOrThrow({ where: { scopeId, content: { contains: 'nurse' } } });
        await tx(async (t) => {
          await supersedeMemory(t, scopeId, tea.id, { content: 'Ana drinks mint tea every afternoon' }, { by: 'owner', now: at(31) });
          await decayMemory(t, scopeId, nurse.id, 0.05, { now: at(31) });
        });
        const result = await regenerateSoul(db.prisma, scopeId, { now: at(32) });
        expect(result).toMatchObject({ version: 2, changed: true });
        expect(result.soul).toContain('Ana drinks mint tea every afternoon (0.90)');
        expect(result.soul).not.toMatch(/green tea|nurse/);
        expect(result.soul).not.toContain('## Facts');
        const mint = await db.prisma.memory.findFirstOrThrow({ where: { scopeId, content: { contains: 'mint tea' } } });
        await tx((t) => reinforceMemory(t, scopeId, mint.id, undefined, { by: 'owner', now: at(33) }));
        const reinforced = await regenerateSoul(db.prisma, scopeId, { now: at(34) });
        expect(reinforced).toMatchObject({ version: 3, changed: true });
        expect(reinforced.soul).toContain('Ana drinks mint tea every afternoon (0.95)');
      });
    });

    describe('digest', () => {
      let digestScope: string;
      const ids: Record<string, string> = {};

      beforeAll(async () => {
        digestScope = (await db.prisma.scope.create({ data: { key: 'telegram:private:9', channel: 'telegram', ownerId: '9', createdAt: T0 } })).id;
        await tx(async (t) => {
          const s = digestScope;
          ids.coffee = (
            await createMemory(t, { scopeId: s, category: 'preference', content: 'Likes coffee', confidence: 0.9 }, { by: 'owner', now: at(1) })
          ).id;
          ids.vegetarian = (await createMemory(t, { scopeId: s, category: 'fact', content: 'Is vegetarian', confidence: 0.9 }, { by: 'owner', now: at(1) })).id;
          ids.chess = (await createMemory(t, { scopeId: s, category: 'interest', content: 'Plays chess', confidence: 0.2 }, { by: 'owner', now: at(1) })).id;
          await reinforceMemory(t, s, ids.vegetarian, undefined, { by: 'owner', now: at(2) });
          await reinforceMemory(t, s, ids.vegetarian, undefined, { by: 'owner', now: at(3) });
          ids.tea = (await supersedeMemory(t, s, ids.coffee, { content: 'Likes tea' }, { by: 'owner', now: at(4) })).current.id;
          ids.steak = (await createMemory(t, { scopeId: s, category: 'fact', content: 'Ate a steak', confidence: 0.8 }, { by: 'owner', now: at(5) })).id;
          await contradictMemory(t, s, ids.vegetarian, ids.steak, { now: at(5), reason: 'meat' });
          await decayMemory(t, s, ids.chess, 0.05, { now: at(6) });
        });
      });

      it('numbers what was learned, updated, contradicted and faded, and counts reinforcements', async () => {
        const digest = await buildDigest(db.prisma, digestScope, { periodEnd: at(12), now: at(12) });
        expect(digest).toMatchObject({ status: 'pending', periodStart: T0, periodEnd: at(12), attempts: 0 });
        expect(digestItems(digest)).toEqual([
          // "Likes coffee", learned and corrected in the period, is told once: by its correction.
          { n: 1, memoryId: ids.vegetarian, action: 'create', text: 'Is vegetarian' },
          { n: 2, memoryId: ids.chess, action: 'create', text: 'Plays chess' },
          { n: 3, memoryId: ids.steak, action: 'create', text: 'Ate a steak' },
          { n: 4, memoryId: ids.tea, action: 'update', text: 'Likes tea (was: Likes coffee)', refs: [ids.coffee] },
          { n: 5, memoryId: ids.vegetarian, action: 'contradict', text: 'Is vegetarian (conflicts with: Ate a steak)', refs: [ids.steak] },
          { n: 6, memoryId: ids.chess, action: 'deactivate', text: 'Plays chess' },
          // The open contradiction, asked about: the likely-current side (both stated: the newer) first.
          { n: 7, memoryId: ids.steak, action: 'conflict', text: 'Ate a steak (you told me on 2026-02-01; newer)', refs: [ids.vegetarian] },
          { n: 8, memoryId: ids.vegetarian, action: 'conflict', text: 'or: Is vegetarian (you told me on 2026-02-01)', refs: [ids.steak] },
        ]);
        expect(digest.content).toBe(
          [
            '# What I learned (2026-02-01 08:00 – 2026-02-01 20:00, UTC)',
            '',
            '## New',
            '',
            '1. Is vegetarian',
            '2. Plays chess',
            '3. Ate a steak',
            '',
            '## Updated',
            '',
            '4. Likes tea (was: Likes coffee)',
            '',
            '## Contradicted',
            '',
            '5. Is vegetarian (conflicts with: Ate a steak)',
            '',
            '## Faded',
            '',
            '6. Plays chess',
            '',
            '## Which is true?',
            '',
            '7. Ate a steak (you told me on 2026-02-01; newer)',
            '8. or: Is vegetarian (you told me on 2026-02-01)',
            '',
            'I was also reminded 2 times of things I already knew.',
            '',
            'To tell me which is true, answer /keep and its number (e.g. /keep 7); I set the other aside.',
            '',
            'To make me forget an item, answer /forget and its number (e.g. /forget 1).',
            '',
          ].join('\n'),
        );
        expect(await digestItem(db.prisma, digestScope, 4)).toBe(ids.tea);
        expect(await digestItem(db.prisma, digestScope, 7)).toBe(ids.steak);
        expect(await digestItem(db.prisma, digestScope, 9)).toBeNull();
      });

      it('is built once per period', async () => {
        const first = await db.prisma.digest.findFirstOrThrow({ where: { scopeId: digestScope } });
        const again = await buildDigest(db.prisma, digestScope, { periodEnd: at(12), now: at(13) });
        expect(again.id).toBe(first.id);
        const racing = await Promise.all([1, 2, 3].map(() => buildDigest(db.prisma, digestScope, { periodEnd: at(12), now: at(14) })));
        expect(new Set(racing.map((d) => d.id))).toEqual(new Set([first.id]));
        expect(await db.prisma.digest.count({ where: { scopeId: digestScope } })).toBe(1);
      });

      it('starts the next period where the last digest with something in it ended, and stores an empty period as empty', async () => {
        const empty = await buildDigest(db.prisma, digestScope, { periodEnd: at(36), now: at(36) });
        expect(empty).toMatchObject({ status: 'empty', content: '', periodStart: at(12), items: [] });
        expect((await latestDigest(db.prisma, digestScope))?.periodEnd).toEqual(at(12));
        await tx((t) =>
          createMemory(t, { scopeId: digestScope, category: 'goal', content: 'Wants to learn Italian', confidence: 0.7 }, { by: 'owner', now: at(40) }),
        );
        const next = await buildDigest(db.prisma, digestScope, { periodEnd: at(60), now: at(60) });
        // The empty period (12 to 36) had nothing to say and was never sent: the next one covers it.
        expect(next.periodStart).toEqual(at(12));
        expect(digestItems(next).map((i) => [i.n, i.text])).toEqual([[1, 'Wants to learn Italian']]);
        expect((await latestDigest(db.prisma, digestScope))?.id).toBe(next.id);
        expect(await digestItem(db.prisma, digestScope, 1)).toBe(digestItems(next)[0]!.memoryId);
      });

      it('never reports again what a later-ending digest covered (a period ending before it is empty)', async () => {
        const earlier = await buildDigest(db.prisma, digestScope, { periodEnd: at(50), now: at(61) });
        expect(earlier).toMatchObject({ status: 'empty', content: '', periodStart: at(50), items: [] });
        expect((await latestDigest(db.prisma, digestScope))?.periodEnd).toEqual(at(60));
      });

      it('queues pending digests of owned scopes for the sender, with retries up to the cap', async () => {
        const first = await db.prisma.digest.findFirstOrThrow({ where: { scopeId: digestScope, periodEnd: at(12) } });
        const second = await db.prisma.digest.findFirstOrThrow({ where: { scopeId: digestScope, periodEnd: at(60) } });
        const queued = async () => (await pendingDigests(db.prisma)).filter((d) => d.scopeId === digestScope).map((d) => d.id);
        expect(await queued()).toEqual([first.id, second.id]);
        expect((await pendingDigests(db.prisma))[0]!.scope.ownerId).toBe('9');
        await markSent(db.prisma, first.id, at(61));
        expect(await db.prisma.digest.findUniqueOrThrow({ where: { id: first.id } })).toMatchObject({ status: 'sent', sentAt: at(61), attempts: 1 });
        await markFailed(db.prisma, second.id);
        expect(await db.prisma.digest.findUniqueOrThrow({ where: { id: second.id } })).toMatchObject({ status: 'failed', attempts: 1 });
        expect(await queued()).toEqual([second.id]);
        for (let i = 0; i < 4; i++) await markFailed(db.prisma, second.id);
        expect(await queued()).toEqual([]);
        // A scope without an owner has nobody to send to.
        await tx((t) => createMemory(t, { scopeId: otherId, category: 'fact', content: 'Ben has a garden', confidence: 0.9 }, { by: 'owner', now: at(70) }));
        const unowned = await buildDigest(db.prisma, otherId, { periodEnd: at(72), now: at(72) });
        expect(unowned.status).toBe('pending');
        expect((await pendingDigests(db.prisma)).map((d) => d.id)).not.toContain(unowned.id);
      });

      it('scrubs forgotten memories from digests, keeping the other numbers', async () => {
        const first = await db.prisma.digest.findFirstOrThrow({ where: { scopeId: digestScope, periodEnd: at(12) } });
        const changed = await tx(async (t) => {
          const removed = await forgetMemory(t, digestScope, ids.steak, { now: at(80) });
          return scrubDigests(t, digestScope, removed);
        });
        expect(changed).toBe(1);
        const scrubbed = await db.prisma.digest.findUniqueOrThrow({ where: { id: first.id } });
        expect(digestItems(scrubbed).map((i) => i.n)).toEqual([1, 2, 4, 6]);
        expect(scrubbed.content).not.toMatch(/steak|conflicts/);
        expect(scrubbed.content).toContain('4. Likes tea (was: Likes coffee)');
        expect(scrubbed.content).toContain('reminded 2 times');
        expect(scrubbed.status).toBe('sent');

        const italian = await db.prisma.digest.findFirstOrThrow({ where: { scopeId: digestScope, periodEnd: at(60) } });
        await db.prisma.digest.update({ where: { id: italian.id }, data: { status: 'pending', attempts: 0 } });
        await tx(async (t) => scrubDigests(t, digestScope, await forgetMemory(t, digestScope, digestItems(italian)[0]!.memoryId, { now: at(81) })));
        // Nothing left to say: not sent at all.
        expect(await db.prisma.digest.findUniqueOrThrow({ where: { id: italian.id } })).toMatchObject({ status: 'empty', content: '', items: [] });
      });
    });
  });
}

suite('SQLite', async () => sqliteDatabase());

if (postgresAvailable()) {
  suite('PostgreSQL', postgresDatabase);
} else {
  it.skip(`soul and digest on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}
