/**
 * Forgetting one memory removes exactly what came from it, on a real SQLite file:
 *
 * - an entity observation keeps its own evidence: forgetting "Priya loves Japanese food" removes
 *   the observation taken from that message, keeps the one another message supports, and the next
 *   fold of Priya's profile never sees the forgotten one;
 * - an entity known only from the forgotten message goes with it (the API's DELETE of a memory);
 * - an entity's folded attributes go when a forgotten observation was folded into them (the rest
 *   is folded again later); attributes no forgotten observation was folded into stay;
 * - a reply whose prompt showed the memory (the soul is in every prompt) is redacted only when it
 *   quotes the memory, not every reply of the day;
 * - the soul no longer holds the memory the moment the forget commits, even if what follows the
 *   commit (the vector deletes) never finishes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import type { LanguageModel, LlmRequest } from '../../src/llm/language-model';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createForgetService } from '../../src/memory/forget/forget-service';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul, soulMarkdown } from '../../src/memory/profiles/soul';
import type { VectorIndex } from '../../src/memory/vectors/vector-index';
import { applyPlan } from '../../src/sleep/consolidation/apply-plan';
import type { Plan } from '../../src/sleep/consolidation/plan';
import { foldEntityObservations } from '../../src/sleep/entities';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const TOKEN = 'forget-evidence-admin-token-0123456789';
const NOW = new Date('2026-05-02T18:00:00Z');
const at = (minutes: number) => new Date(NOW.getTime() - (600 - minutes) * 60_000);

/** A model that records the prompts it is sent and answers with `answer`. */
function recordingModel(answer: string): LanguageModel & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    provider: 'anthropic',
    model: 'recording',
    contextWindow: 200_000,
    prompts,
    async complete(request: LlmRequest) {
      prompts.push(request.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n'));
      return {
        text: answer,
        toolCalls: [],
        stopReason: 'end',
        usage: { inputTokens: 1, outputTokens: 1 },
        model: 'recording',
        provider: 'anthropic',
        durationMs: 1,
      };
    },
    async close() {},
  };
}

function emptyPlan(episodeIds: string[]): Plan {
  return {
    create: [],
    reinforce: [],
    update: [],
    contradict: [],
    decay: [],
    connect: [],
    importance: [],
    summaries: [],
    entities: [],
    insights: [],
    episodeIds,
    rejected: [],
  };
}

describe('forgetting one memory removes what came from it, and only that', () => {
  let core: Core;
  let api: FastifyInstance;
  let base: string;
  let scopeId: string;

  async function episode(role: 'user' | 'agent', content: string, minutes: number, metadata?: Record<string, unknown>): Promise<string> {
    const { episode } = await core.episodeService.ingest(
      { key: 'terminal:ana', channel: 'terminal', title: 'Ana' },
      { role, content, author: role === 'user' ? 'Ana' : 'Nocturne', timestamp: at(minutes).toISOString(), metadata },
    );
    return episode!.id;
  }

  beforeAll(async () => {
    const config = loadConfig({ env: { DATA_DIR: tempDir('nocturne-forget-evidence-'), TZ: 'UTC' }, envFile: false });
    core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    api = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: core.logger });
    base = await api.listen({ host: '127.0.0.1', port: 0 });
    await episode('user', 'hello', 0);
    scopeId = (await core.scopes.findByKey('terminal:ana'))!.id;
  });
  afterAll(async () => {
    await api?.close();
    await core?.close();
  });

  it('keeps each entity observation on its own message, and forgetting one removes only it, for good', async () => {
    const colleague = await episode('user', 'Priya is my colleague from the lab.', 10);
    const food = await episode('user', 'Priya loves Japanese food, we went for ramen.', 11);
    const plan = emptyPlan([colleague, food]);
    plan.create.push({
      category: 'relationship',
      content: 'Priya loves Japanese food',
      confidence: 0.9,
      importance: 0.5,
      sourceType: 'stated',
      sourceEpisodeIds: [food],
    });
    plan.entities.push({
      name: 'Priya',
      kind: 'person',
      favorability: 0.1,
      episodeIds: [colleague, food],
      observations: ['Priya is a colleague from the lab', 'Priya loves Japanese food', 'Priya went for ramen'],
    });
    const { createdMemoryIds } = await applyPlan(core.db.prisma, scopeId, plan, { now: at(20) });
    const observations = async () =>
      (await core.db.prisma.entityObservation.findMany({ where: { scopeId, entity: { key: 'priya' } }, select: { content: true, episodeId: true } }))
        .map((o) => `${o.content} <- ${o.episodeId === food ? 'food' : o.episodeId === colleague ? 'colleague' : o.episodeId}`)
        .sort();
    expect(await observations()).toEqual([
      'Priya is a colleague from the lab <- colleague',
      'Priya loves Japanese food <- food',
      'Priya went for ramen <- food',
    ]);

    await core.forget.forgetMemory(scopeId, createdMemoryIds[0]!);
    expect(await observations()).toEqual(['Priya is a colleague from the lab <- colleague']);
    // The next sleep folds Priya's profile: the forgotten observation is not in what the model sees.
    const priya = await core.db.prisma.entity.findFirstOrThrow({ where: { scopeId, key: 'priya' } });
    await core.db.prisma.entityObservation.createMany({
      data: ['Priya runs marathons', 'Priya speaks Hindi'].map((content) => ({ scopeId, entityId: priya.id, episodeId: colleague, content })),
    });
    const model = recordingModel('{"entities": [{"entity": 1, "attributes": {"job": "lab colleague"}}]}');
    const folded = await foldEntityObservations({ prisma: core.db.prisma, llm: model }, scopeId, { now: at(30) });
    expect(folded.observations).toBe(3);
    expect(model.prompts.join('\n')).not.toMatch(/japanese|ramen/i);
    await regenerateSoul(core.db.prisma, scopeId, { now: at(31) });
    expect(await soulMarkdown(core.db.prisma, scopeId)).not.toMatch(/japanese|ramen/i);
  });

  it('DELETE /scopes/:id/memories/:mid takes an entity known only from that message with it', async () => {
    const said = await episode('user', 'I have been learning the theremin since March.', 40);
    const other = await episode('user', 'My neighbour Tom plays the cello.', 41);
    const plan = emptyPlan([said, other]);
    plan.create.push({
      category: 'interest',
      content: 'Ana is learning the theremin',
      confidence: 0.9,
      importance: 0.5,
      sourceType: 'stated',
      sourceEpisodeIds: [said],
    });
    plan.entities.push({ name: 'Theremin', kind: 'thing', favorability: 0, episodeIds: [said], observations: ['Ana learns the theremin since March'] });
    plan.entities.push({ name: 'Tom', kind: 'person', favorability: 0, episodeIds: [other], observations: ['Tom plays the cello'] });
    const { createdMemoryIds } = await applyPlan(core.db.prisma, scopeId, plan, { now: at(45) });
    const response = await fetch(`${base}/scopes/${scopeId}/memories/${createdMemoryIds[0]}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const names = (await core.db.prisma.entity.findMany({ where: { scopeId }, select: { name: true } })).map((e) => e.name).sort();
    expect(names).toEqual(['Priya', 'Tom']);
    expect(JSON.stringify(await core.db.prisma.auditEvent.findMany({ where: { scopeId } }))).not.toMatch(/theremin/i);
  });

  it('keeps attributes no forgotten observation was folded into, and empties those one was', async () => {
    const kite = await episode('user', 'Hana flew her red kite on the beach with me.', 50);
    const other = await episode('user', 'Hana is my cousin, she teaches maths.', 51);
    const plan = emptyPlan([kite, other]);
    plan.create.push({
      category: 'relationship',
      content: 'Ana flew a red kite with Hana on the beach',
      confidence: 0.9,
      importance: 0.5,
      sourceType: 'stated',
      sourceEpisodeIds: [kite],
    });
    plan.entities.push({
      name: 'Hana',
      kind: 'person',
      favorability: 0.1,
      episodeIds: [kite, other],
      observations: ['Hana flew a red kite on the beach', 'Hana is a cousin', 'Hana teaches maths'],
    });
    plan.entities.push({ name: 'Omar', kind: 'person', favorability: 0.1, episodeIds: [kite], observations: ['Omar watched the red kite on the beach'] });
    const { createdMemoryIds } = await applyPlan(core.db.prisma, scopeId, plan, { now: at(52) });
    const prisma = core.db.prisma;
    // Hana's profile is folded (the kite among its sources); Omar's attribute was set with no observation folded.
    const model = recordingModel('{"entities": [{"entity": 1, "attributes": {"relation": "cousin", "hobby": "red kites"}}]}');
    await foldEntityObservations({ prisma, llm: model }, scopeId, { now: at(53) });
    await prisma.entity.update({ where: { scopeId_key: { scopeId, key: 'omar' } }, data: { attributes: { relation: 'friend' } } });
    expect((await prisma.entity.findFirstOrThrow({ where: { scopeId, key: 'hana' } })).attributes).toEqual({ relation: 'cousin', hobby: 'red kites' });

    await core.forget.forgetMemory(scopeId, createdMemoryIds[0]!);
    const hana = await prisma.entity.findFirstOrThrow({ where: { scopeId, key: 'hana' }, include: { observations: true } });
    expect(hana.attributes).toEqual({});
    expect(hana.observations.map((o) => [o.content, o.consolidated]).sort()).toEqual([
      ['Hana is a cousin', false],
      ['Hana teaches maths', false],
    ]);
    expect((await prisma.entity.findFirstOrThrow({ where: { scopeId, key: 'omar' } })).attributes).toEqual({ relation: 'friend' });
    expect(JSON.stringify(await prisma.auditEvent.findMany({ where: { scopeId, subjectType: 'entity' } }))).not.toMatch(/kite/i);
  });

  it('redacts a reply that showed the memory only where the reply quotes it', async () => {
    const source = await episode('user', 'I drink black coffee every morning.', 60);
    const memory = await core.db.prisma.$transaction((tx) =>
      createMemory(
        tx,
        { scopeId, category: 'preference', content: 'Ana drinks black coffee every morning', confidence: 0.9, sourceEpisodeIds: [source] },
        { now: at(61) },
      ),
    );
    await regenerateSoul(core.db.prisma, scopeId, { now: at(62) });
    // Later the same day: the soul (with the memory) is in every prompt.
    await episode('user', 'Off to see Hannah this weekend.', 70);
    const weekend = await episode('agent', 'Have a lovely weekend with Hannah!', 71, { injectedMemoryIds: [memory.id] });
    await episode('user', 'What should I have for breakfast?', 72);
    const coffee = await episode('agent', 'Your usual black coffee, and maybe some toast.', 73, { injectedMemoryIds: [memory.id] });

    await core.forget.forgetMemory(scopeId, memory.id);
    const content = async (id: string) => (await core.db.prisma.episode.findUniqueOrThrow({ where: { id } })).content;
    expect(await content(weekend)).toBe('Have a lovely weekend with Hannah!');
    expect(await content(coffee)).toMatch(/^\[forgotten/);
    expect(await content(source)).toMatch(/^\[forgotten/);
  });

  it('confirms exactly what the preview listed: a version added since is not removed unseen', async () => {
    const v1 = await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'preference', content: 'Ana likes green olives', confidence: 0.9 }, { now: at(90), by: 'owner' }),
    );
    const v2 = await core.db.prisma.$transaction(
      async (tx) => (await supersedeMemory(tx, scopeId, v1.id, { content: 'Ana likes black olives now' }, { now: at(91), by: 'owner' })).current,
    );
    const preview = await core.forget.forgetMatching(scopeId, 'green olives');
    expect(preview.matches.map((m) => m.id).sort()).toEqual([v1.id, v2.id].sort());
    // Before the owner confirms, the chain gets a version nobody was shown.
    await core.db.prisma.$transaction((tx) => supersedeMemory(tx, scopeId, v2.id, { content: 'Ana stopped eating olives' }, { now: at(92), by: 'owner' }));
    await expect(preview.confirm()).rejects.toMatchObject({ code: 'forget.changed' });
    expect(await core.db.prisma.memory.count({ where: { scopeId, content: { contains: 'olives' } } })).toBe(3);
    const again = await core.forget.forgetMatching(scopeId, 'green olives');
    expect(again.matches).toHaveLength(3);
    expect((await again.confirm()).removedIds).toHaveLength(3);
  });

  it('has the soul without the memory the moment the forget commits, before the vectors are deleted', async () => {
    const memory = await core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'fact', content: 'Ana keeps a pet axolotl called Nimbus', confidence: 0.9 }, { now: at(80), by: 'owner' }),
    );
    await regenerateSoul(core.db.prisma, scopeId, { now: at(81) });
    expect(await soulMarkdown(core.db.prisma, scopeId)).toContain('axolotl');
    // A vector index whose deletes never finish: what follows the commit does not complete.
    let entered!: () => void;
    const deleting = new Promise<void>((resolve) => (entered = resolve));
    const stuck: VectorIndex = { ...core.vectorIndex, delete: () => (entered(), new Promise<void>(() => undefined)) };
    const forget = createForgetService({ prisma: core.db.prisma, index: stuck, logger: core.logger });
    void forget.forgetMemory(scopeId, memory.id);
    await deleting;
    expect(await core.db.prisma.memory.count({ where: { id: memory.id } })).toBe(0);
    expect(await soulMarkdown(core.db.prisma, scopeId)).not.toContain('axolotl');
  });
});
