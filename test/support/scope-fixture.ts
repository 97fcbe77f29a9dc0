/**
 * A scope with something in every table an export covers, made through the real write paths
 * (episode service, memory writer, soul, digest) plus direct rows where no service exists yet
 * (sleep runs, entities, conversations, LLM calls). Used by the export and store-migration tests.
 *
 * It carries the cases a naive copy gets wrong: JSON documents with keys out of order (jsonb
 * reorders them), floats that are not short decimals, a supersession chain, a faded memory,
 * links in both directions, multi-line content, and a credential-looking string.
 */
import { createMemory, decayMemory, linkMemories, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { createEpisodeService } from '../../src/memory/episodes/episode-service';
import { createSilentLogger } from '../../src/shared/logger';
import { buildDigest } from '../../src/memory/digests/digest';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { createEpisodeRepository } from '../../src/storage/episode-repository';
import type { PrismaClient } from '../../src/storage/prisma';
import { createScopeRepository } from '../../src/storage/scope-repository';

export const FIXTURE_START = new Date('2024-02-01T09:00:00.000Z');
const at = (hours: number) => new Date(FIXTURE_START.getTime() + hours * 3_600_000);

export interface SeededScope {
  readonly scopeId: string;
  readonly ids: Readonly<Record<string, string>>;
}

/** Fills a new scope `key`; `withSecret` adds an episode quoting an API key (for the redaction test). */
export async function seedScope(prisma: PrismaClient, key: string, options: { withSecret?: boolean } = {}): Promise<SeededScope> {
  const service = createEpisodeService({
    scopes: createScopeRepository(prisma),
    episodes: createEpisodeRepository(prisma),
    logger: createSilentLogger(),
    maxEpisodeBytes: 1_000_000,
  });
  const conversation = await prisma.conversation.create({
    data: {
      scope: { connectOrCreate: { where: { key }, create: { key, channel: 'terminal', title: 'Ana' } } },
      status: 'ended',
      startedAt: at(0),
      lastActivityAt: at(0.5),
      endedAt: at(1),
      endReason: 'idle',
      summary: 'Talked about tea.',
      state: { recent: ['x'], goals: [], b: 1, a: 2 },
    },
  });
  const scopeId = conversation.scopeId;
  await prisma.scope.update({
    where: { id: scopeId },
    data: { timezone: 'Europe/Madrid', settings: { sleepWindow: { start: '01:00', end: '05:00' }, memoryCap: 500, a: true } },
  });
  const inputs = [
    {
      role: 'user',
      author: 'Ana',
      content: 'I drink coffee every morning.',
      timestamp: at(0).toISOString(),
      conversationId: conversation.id,
      externalId: 'm1',
      metadata: { topics: ['coffee'], entities: ['Ana'], taskType: 'chat' },
    },
    {
      role: 'agent',
      content: 'Noted: coffee in the morning.\n\n# not a heading\nSecond line.',
      timestamp: at(0.1).toISOString(),
      conversationId: conversation.id,
      externalId: 'm2',
    },
    {
      role: 'user',
      author: 'Ana',
      content: 'Actually I switched to green tea. My sister Bea says hi.',
      timestamp: at(26).toISOString(),
      conversationId: 'import-label-1',
      externalId: 'm3',
      metadata: { topics: ['tea', 'family'], entities: ['Bea'], importance: 0.9 },
    },
    { role: 'user', author: 'Ana', content: 'I work night shifts as a nurse.', timestamp: at(50).toISOString(), externalId: 'm4' },
    ...(options.withSecret
      ? [{ role: 'user', author: 'Ana', content: 'my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345', timestamp: at(51).toISOString(), externalId: 'm5' }]
      : []),
  ];
  await service.ingestMany(
    { key, channel: 'terminal' },
    inputs.map((input) => service.normalize(input, 'terminal')),
  );
  const episodes = await prisma.episode.findMany({ where: { scopeId }, orderBy: { timestamp: 'asc' } });
  const [e1, , e3, e4] = episodes;
  await prisma.episode.update({ where: { id: e1!.id }, data: { consolidated: true, consolidatedAt: at(2), importance: 0.1 + 0.2, importanceSource: 'model' } });

  const run = await prisma.sleepRun.create({
    data: {
      scopeId,
      kind: 'consolidation',
      status: 'succeeded',
      startedAt: at(2),
      finishedAt: at(2.01),
      episodeCount: 3,
      llmCalls: 1,
      inputTokens: 1200,
      outputTokens: 300,
      stats: { z: [3, 2, 1], created: 2, a: { y: null, x: 1.5 } },
    },
  });
  const ids: Record<string, string> = { conversation: conversation.id, e1: e1!.id, e3: e3!.id, e4: e4!.id, run: run.id };
  await prisma.$transaction(async (tx) => {
    ids.coffee = (
      await createMemory(
        tx,
        { scopeId, category: 'preference', content: 'Ana drinks coffee every morning', confidence: 0.8, sourceEpisodeIds: [e1!.id] },
        { now: at(2), runId: run.id },
      )
    ).id;
    ids.tea = (
      await supersedeMemory(
        tx,
        scopeId,
        ids.coffee,
        { content: 'Ana drinks green tea', confidence: 0.9, sourceEpisodeIds: [e3!.id] },
        { now: at(27), runId: run.id, reason: 'switched' },
      )
    ).current.id;
    ids.nurse = (
      await createMemory(
        tx,
        { scopeId, category: 'fact', content: 'Ana works night shifts as a nurse', confidence: 0.85, sourceEpisodeIds: [e4!.id], sourceType: 'observed' },
        { now: at(51) },
      )
    ).id;
    ids.chess = (await createMemory(tx, { scopeId, category: 'interest', content: 'Ana plays chess', confidence: 0.3 }, { by: 'owner', now: at(27) })).id;
    await decayMemory(tx, scopeId, ids.chess, 0.05, { now: at(52), reason: 'not mentioned' });
    await linkMemories(tx, scopeId, ids.tea, ids.nurse, 'related', 0.42, { now: at(52), reason: 'tea on night shifts' });
  });
  const entity = await prisma.entity.create({
    data: {
      scopeId,
      key: 'bea',
      name: 'Bea',
      kind: 'person',
      attributes: { relation: 'sister', age: 31 },
      favorability: 0.6,
      interactionCount: 1,
      createdAt: at(27),
      updatedAt: at(27),
    },
  });
  ids.bea = entity.id;
  await prisma.entityObservation.create({ data: { scopeId, entityId: entity.id, episodeId: e3!.id, content: 'Bea is Ana’s sister', createdAt: at(27) } });
  await regenerateSoul(prisma, scopeId, { now: at(53) });
  await buildDigest(prisma, scopeId, { periodEnd: at(54), now: at(54) });
  await prisma.llmCall.create({
    data: {
      scopeId,
      purpose: 'consolidation',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      inputTokens: 1200,
      outputTokens: 300,
      durationMs: 900,
      status: 'ok',
      runId: run.id,
      createdAt: at(2),
    },
  });
  return { scopeId, ids };
}
