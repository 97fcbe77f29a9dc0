/**
 * A bounded soul in the reply prompt, end to end through the real `ollama` client and the loopback
 * Ollama server (llama3.2: an 8,192-token window): with 160 memories the soul keeps the
 * best-ranked ones within SOUL_MAX_TOKENS, the prompt sent to the model stays within the reply
 * budget, and no memory is both in the soul and in the list of retrieved memories.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { HEADINGS } from '../../src/agent/prompt-builder';
import { createTokenEstimator } from '../../src/agent/token-budget';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { DEFAULT_SOUL_MAX_TOKENS } from '../../src/memory/profiles/soul-render';
import { agentServices } from '../../src/service';
import { estimateTokens } from '../../src/shared/tokens';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const KEY = 'telegram:private:7';
const MEMORIES = 160;
const PLACES = ['river', 'forest', 'harbour', 'mountain', 'market', 'castle', 'lake', 'bridge'];

/** The `- ...` lines of one part of the system prompt (from its heading to the next heading). */
function linesUnder(system: string, heading: string): string[] {
  const start = system.indexOf(heading);
  if (start < 0) return [];
  const rest = system.slice(start + heading.length);
  const ends = Object.values(HEADINGS)
    .map((h) => rest.indexOf(`\n${h}`))
    .filter((i) => i >= 0);
  return (ends.length === 0 ? rest : rest.slice(0, Math.min(...ends))).split('\n').filter((l) => l.startsWith('- '));
}

describe('bounded soul in the reply prompt (Ollama double, 8k window)', () => {
  let double: OllamaDouble;
  let h: AgentCore;
  let agent: Agent;
  const now = new Date('2026-05-01T10:00:00Z');

  beforeAll(async () => {
    double = await startOllamaDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({ dataDir: tempDir(), provider: 'ollama', url: double.url });
    agent = createAgent({ ...agentServices(h.core), options: { clock: () => now } });
    const scope = await h.core.scopes.ensure({ key: KEY, channel: 'telegram', kind: 'private' });
    await h.core.db.prisma.$transaction(
      async (tx) => {
        for (let i = 0; i < MEMORIES; i++) {
          const place = PLACES[i % PLACES.length]!;
          const origin = { by: 'owner' as const, now: new Date(now.getTime() - (i % 50) * 86_400_000) };
          await createMemory(
            tx,
            {
              scopeId: scope.id,
              category: ['preference', 'fact', 'interest', 'routine'][i % 4]!,
              content: `The user walks hiking route number ${i} along the ${place} on weekends with old friends from school`,
              confidence: 0.6 + (i % 7) * 0.05,
            },
            origin,
          );
        }
      },
      { timeout: 60_000 },
    );
    await regenerateSoul(h.core.db.prisma, scope.id, { now, maxTokens: h.core.config.sleep.soulMaxTokens });
    await h.core.embeddingWorker.drain();
  }, 120_000);
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it('keeps the soul within SOUL_MAX_TOKENS and the prompt within the reply budget, without repeating a memory', async () => {
    expect(h.core.config.sleep.soulMaxTokens).toBe(DEFAULT_SOUL_MAX_TOKENS);
    const reply = await agent.handle({
      channel: 'telegram',
      scopeKey: KEY,
      scopeKind: 'private',
      authorName: 'Ana',
      authorId: '7',
      text: 'Which hiking route along the river should I walk this weekend with friends?',
      timestamp: now,
      externalId: 'q1',
    });
    expect(reply.degraded).toBeUndefined();
    expect(agent.budget.contextTokens).toBe(8192);

    const request = h.requests.filter((r) => r.purpose === 'reply').at(-1)!;
    const estimator = createTokenEstimator('ollama', 'llama3.2');
    // The prompt sent to the model, re-estimated here, leaves the answer its reserve in the window.
    expect(estimator.request(request) + agent.budget.answerTokens).toBeLessThanOrEqual(agent.budget.contextTokens);
    // The soul part: the budget (in the family's estimate) plus its heading, not half the window.
    const soulLines = linesUnder(request.system!, HEADINGS.soul);
    expect(soulLines.length).toBeGreaterThan(10);
    expect(estimateTokens(soulLines.join('\n'))).toBeLessThanOrEqual(DEFAULT_SOUL_MAX_TOKENS);
    expect(reply.tokens!.soul).toBeLessThanOrEqual(Math.ceil(DEFAULT_SOUL_MAX_TOKENS * estimator.factor) + 20);

    // Retrieved memories are shown, and none of them is one the soul already states.
    const route = (line: string) => /route number (\d+) /.exec(line)?.[1];
    const listed = linesUnder(request.system!, HEADINGS.memories)
      .map(route)
      .filter((r) => r !== undefined);
    expect(listed.length).toBeGreaterThan(0);
    const inSoul = new Set(soulLines.map(route));
    expect(listed.filter((r) => inSoul.has(r))).toEqual([]);
  });
});
