/**
 * The memory hygiene benchmark's pieces at a tiny size: two people for twelve days through the real
 * service (webhook, agent, nightly sleep jobs) with the misbehaving loopback model; then known
 * duplicates and junk are planted in the store and the figures must move by exactly that much.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import type { PrismaClient } from '../../src/storage/prisma';
import { junkReason, measureStore, measureWire, percentile, summarize } from '../../bench/memory/metrics';
import { recognize } from '../../bench/memory/recognizer';
import { createPeople } from '../../bench/memory/people';
import { schedule } from '../../bench/memory/messages';
import { runSimulation, SIMULATION_START, type Simulation } from '../../bench/memory/simulation';

const measuring = createHashEmbedder({ dimension: 256 });

describe('the memory hygiene benchmark', () => {
  let sim: Simulation;
  let prisma: PrismaClient;

  beforeAll(async () => {
    // Twelve days hold fewer episodes than the service's schedule waits for: consolidation is due sooner here.
    sim = await runSimulation({
      people: 2,
      days: 12,
      seed: 11,
      embedder: createHashEmbedder({ dimension: 256 }),
      env: { SLEEP_MIN_EPISODES: '10', SLEEP_MAX_WAIT_HOURS: '72' },
    });
    prisma = sim.service.core.db.prisma;
  }, 60_000);

  afterAll(async () => {
    await sim?.stop();
    await measuring.close();
  });

  it('generates messages the model double can read back', () => {
    const people = createPeople({ count: 3, days: 30, seed: 5, start: SIMULATION_START });
    const messages = schedule(people, { days: 30, start: SIMULATION_START, seed: 5 }).flatMap((c) => c.messages);
    expect(messages.length).toBeGreaterThan(20);
    for (const m of messages) expect(recognize(m.text).map((f) => f.kind.key)[0] ?? null).toBe(m.says);
  });

  it('ran the conversations and the nights through the service', async () => {
    expect(sim.messages).toBeGreaterThan(10);
    expect(sim.failedReplies).toBe(0);
    expect(await prisma.episode.count()).toBe(sim.messages * 2);
    const purposes = new Set(sim.model.calls.map((c) => c.purpose));
    expect(purposes.has('reply')).toBe(true);
    expect(purposes.has('consolidation')).toBe(true);
    expect(await prisma.memory.count()).toBeGreaterThan(0);
    expect(await prisma.profile.count()).toBeGreaterThan(0);
  });

  it('counts exactly the duplicates and junk planted in the store', async () => {
    const before = await measureStore(prisma, measuring);
    const scope = (await prisma.scope.findFirstOrThrow({ orderBy: { createdAt: 'asc' } })).id;
    const user = await prisma.episode.findFirstOrThrow({ where: { scopeId: scope, role: 'user' } });
    const agent = await prisma.episode.findFirstOrThrow({ where: { scopeId: scope, role: 'agent' } });
    const plant = async (content: string, sources: string[], active = true) => {
      const m = await prisma.memory.create({ data: { scopeId: scope, category: 'fact', content, confidence: 0.9, active } });
      for (const episodeId of sources) await prisma.memorySource.create({ data: { scopeId: scope, memoryId: m.id, episodeId } });
    };
    const unique = 'The user collects antique typewriters from Prague and repairs them.';
    await plant(unique, [user.id]);
    await plant(unique, [user.id]); // +1 near-duplicate pair
    await plant(unique, [user.id], false); // inactive: not counted
    await plant('...', [user.id]); // placeholder
    await plant('The assistant will remind the user about the meeting.', [user.id]); // about the assistant
    await plant('The user hums jazz standards while cooking breakfast.', [agent.id]); // only an agent turn as evidence
    await plant('The user sails a small dinghy on weekends at the lake.', []); // no evidence

    const after = await measureStore(prisma, measuring);
    expect(after.activeMemories - before.activeMemories).toBe(6);
    expect(after.nearDuplicatePairs - before.nearDuplicatePairs).toBe(1);
    expect(after.duplicatedMemories - before.duplicatedMemories).toBe(2);
    expect(after.junk.placeholder - before.junk.placeholder).toBe(1);
    expect(after.junk['about-assistant'] - before.junk['about-assistant']).toBe(1);
    expect(after.junk['no-user-evidence'] - before.junk['no-user-evidence']).toBe(2);
    const summary = summarize(after, measureWire(sim.model.calls, sim.replyLimit));
    expect(summary.nearDuplicatePct).toBeCloseTo((after.nearDuplicatePairs / after.activeMemories) * 100, 2);
    expect(summary.junkPct).toBeCloseTo((after.junkTotal / after.activeMemories) * 100, 2);
    // The cost figures count the memory's work: every call but the replies (one per message).
    const memoryWork = sim.model.calls.filter((c) => c.purpose !== 'reply');
    expect(summary.llmCallsPerEpisode).toBeCloseTo(memoryWork.length / after.episodes, 3);
    expect(summary.allPurposesCallsPerEpisode).toBeCloseTo(sim.model.calls.length / after.episodes, 3);
    expect(summary.inputTokensPerEpisode).toBe(Math.round(memoryWork.reduce((n, c) => n + c.tokens, 0) / after.episodes));
  });

  it('classifies junk, percentiles and prompts over budget', () => {
    expect(junkReason({ content: '<fact>', sourceRoles: ['user'] })).toBe('placeholder');
    expect(junkReason({ content: 'I will remind them tomorrow.', sourceRoles: ['user'] })).toBe('about-assistant');
    expect(junkReason({ content: 'The bot was helpful.', sourceRoles: ['user'] })).toBe('about-assistant');
    expect(junkReason({ content: 'The user lives in Porto.', sourceRoles: ['agent'] })).toBe('no-user-evidence');
    expect(junkReason({ content: 'The user lives in Porto.', sourceRoles: ['agent', 'user'] })).toBeNull();
    expect(junkReason({ content: 'Ingrid is the user’s sister.', sourceRoles: ['user'] })).toBeNull();
    expect(percentile([5, 1, 4, 2, 3], 95)).toBe(5);
    expect(percentile([], 95)).toBe(0);
    const wire = measureWire(
      [
        { purpose: 'reply', tokens: 7_000 },
        { purpose: 'reply', tokens: 7_169 },
        { purpose: 'consolidation', tokens: 9_000 },
        { purpose: 'reply', tokens: 100 },
      ],
      7_168,
    );
    expect(wire).toMatchObject({ replyPrompts: 3, replyOverBudget: 1, calls: 4, inputTokens: 23_269 });
  });
});
