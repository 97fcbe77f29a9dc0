/**
 * Every dreaming and capped-mode prompt is sized to the model's context window: with the real
 * Ollama SDK and a model configured with a 2,048-token window, entity folding and
 * capped mode on a scope with far more than fits still send requests whose body (counted on the
 * wire at the loopback double, about 4 characters a token) plus the answer allowed stays within
 * the window; what was left out waits for a later run instead of being marked done. Reflection
 * rides on a consolidation prompt (sleep/reflection.ts): with its request, it fits an 8k window.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createOllamaModel } from '../../src/llm/ollama-model';
import type { LanguageModel } from '../../src/llm/language-model';
import { rememberConversation } from '../../src/memory/memories/capped-memory';
import { foldEntityObservations } from '../../src/sleep/entities';
import { createSleepService } from '../../src/sleep/sleep-service';
import { uuidv7 } from '../../src/shared/ids';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const WINDOW = 2_048;
const LONG = 'and then we talked for a long while about the garden, the neighbours, the weather and the plans for the summer';

function tokensOnTheWire(request: SeenLlmRequest): number {
  return Math.ceil(JSON.stringify(request.body).length / 4) + (request.maxTokens ?? 0);
}

describe('prompts sized to a small context window', () => {
  let core: Core;
  let ollama: OllamaDouble;
  let llm: LanguageModel;
  let turn = 0;

  async function scopeWith(key: string, lines: string[]): Promise<string> {
    const at = new Date('2026-03-01T10:00:00Z');
    await core.episodeService.ingestMany(
      { key, channel: 'telegram' },
      lines.map((content, i) =>
        core.episodeService.normalize(
          {
            role: 'user',
            content,
            author: 'Ana',
            conversationId: `${key}-c`,
            externalId: `s${turn++}`,
            timestamp: new Date(at.getTime() + i * 60_000).toISOString(),
          },
          'telegram',
        ),
      ),
    );
    return (await core.scopes.findByKey(key))!.id;
  }

  beforeAll(async () => {
    ollama = await startOllamaDouble({
      responder: (seen) => {
        if (seen.system?.includes('profiles of the people'))
          return { kind: 'text', text: JSON.stringify({ entities: [{ entity: 1, attributes: { relation: 'friend' } }] }) };
        if (seen.system?.includes('memory consolidation system')) return { kind: 'text', text: JSON.stringify({ nothing: 'days in the garden' }) };
        if (seen.system?.includes('memory management assistant'))
          return { kind: 'text', text: JSON.stringify({ action: 'delete', targetMemoryId: 1, reason: 'oldest' }) };
        if (seen.system?.includes('memory sub-agent')) return { kind: 'text', text: JSON.stringify({ content: 'The user talks about the garden' }) };
        return undefined;
      },
    });
    const config = loadConfig({ env: { DATA_DIR: tempDir(), LLM_PROVIDER: 'ollama', OLLAMA_HOST: ollama.url }, envFile: false });
    core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 256 }) });
    llm = createOllamaModel({ host: ollama.url, model: 'llama3.2', contextWindow: WINDOW });
  });
  afterAll(async () => {
    await core?.close();
    await ollama?.stop();
  });

  it('entity folding shows what fits; the observations not shown stay pending', async () => {
    const scopeId = await scopeWith('telegram:private:601', ['My friend Rui is a carpenter']);
    const now = new Date('2026-03-02T03:00:00Z');
    for (let i = 0; i < 10; i++) {
      const entity = await core.db.prisma.entity.create({ data: { scopeId, key: `friend ${i}`, name: `Friend ${i}`, kind: 'person' } });
      await core.db.prisma.entityObservation.createMany({
        data: Array.from({ length: 30 }, (_, j) => ({ scopeId, entityId: entity.id, content: `Friend ${i} said thing ${j}: ${LONG}` })),
      });
    }
    ollama.reset();
    const r = await foldEntityObservations({ prisma: core.db.prisma, llm }, scopeId, { now });
    const calls = ollama.chatRequests;
    expect(calls).toHaveLength(1);
    for (const call of calls) expect(tokensOnTheWire(call)).toBeLessThanOrEqual(WINDOW);
    expect(r.observations).toBeGreaterThan(0);
    // What the model did not see is not marked folded.
    expect(await core.db.prisma.entityObservation.count({ where: { scopeId, consolidated: false } })).toBe(300 - r.observations);
  });

  it('a consolidation prompt that also asks for insights (reflection due) fits an 8k window', async () => {
    const scopeId = await scopeWith(
      'telegram:private:602',
      Array.from({ length: 40 }, (_, i) => `Day ${i}: ${LONG}`),
    );
    await core.db.prisma.episode.updateMany({ where: { scopeId }, data: { importance: 0.5 } });
    for (let i = 0; i < 30; i++) {
      await core.db.prisma.memory.create({
        data: { scopeId, category: 'fact', content: `Memory ${i}: ${LONG}`, confidence: 0.8, importance: 0.5, sourceType: 'stated' },
      });
    }
    const window = 8_192;
    const sleep = createSleepService({
      prisma: core.db.prisma,
      llm: createOllamaModel({ host: ollama.url, model: 'llama3.2', contextWindow: window }),
      search: core.search,
      logger: memoryLogger().logger,
    });
    ollama.reset();
    const r = await sleep.consolidateScope(scopeId, {
      now: new Date('2026-03-02T03:00:00Z'),
      runId: uuidv7(),
      shouldContinue: () => true,
      tokenBudgetLeft: Number.POSITIVE_INFINITY,
    });
    expect(r.episodes).toBe(40);
    const calls = ollama.chatRequests.filter((c) => c.system?.includes('memory consolidation system'));
    expect(calls.length).toBeGreaterThan(0);
    // 40 turns at 0.5: 200 importance points, so reflection rides on the first prompt, and only there.
    expect(calls.filter((c) => c.messages.at(-1)?.text.includes('## Reflection'))).toHaveLength(1);
    for (const call of calls) expect(tokensOnTheWire(call)).toBeLessThanOrEqual(window);
  });

  it('capped mode reads the turns that fit and leaves the rest of a long conversation for later', async () => {
    const scopeId = await scopeWith(
      'telegram:private:603',
      Array.from({ length: 60 }, (_, i) => `Turn ${i}: ${LONG}`),
    );
    const episodes = await core.db.prisma.episode.findMany({ where: { scopeId }, orderBy: { timestamp: 'asc' } });
    for (let i = 0; i < 40; i++) {
      await core.db.prisma.memory.create({
        data: { scopeId, category: 'fact', content: `Memory ${i}: ${LONG}`, confidence: 0.8, importance: 0.5, sourceType: 'stated' },
      });
    }
    ollama.reset();
    await rememberConversation({ prisma: core.db.prisma, llm, logger: memoryLogger().logger }, scopeId, episodes, 40, {
      now: new Date('2026-03-02T03:00:00Z'),
    });
    expect(ollama.chatRequests.length).toBe(2); // the memory, then the cap decision
    for (const call of ollama.chatRequests) expect(tokensOnTheWire(call)).toBeLessThanOrEqual(WINDOW);
    const done = await core.db.prisma.episode.count({ where: { scopeId, consolidated: true } });
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(60);
  });
});
