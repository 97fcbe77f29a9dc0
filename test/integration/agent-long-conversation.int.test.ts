/**
 * The budget holds over a 2,000-turn conversation (1,000 messages of the person and 1,000
 * replies; a turn is one message, as `Episode.turn` counts them): with a small window (3,000 tokens) compaction
 * runs many times, every request the agent makes (replies, flushes, summaries) fits the window,
 * every cycle is one flush followed by one summary, and no turn is lost: each one is either still
 * in the recent window or was handed to exactly one flush and one summary.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { createTokenEstimator } from '../../src/agent/token-budget';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, flushTurns, openAgentCore, type AgentCore } from './agent-harness';

const TURNS = 2_000;
const EXCHANGES = TURNS / 2;
const WINDOW = 3_000;

describe('a 2,000-turn conversation', () => {
  let double: AnthropicDouble;
  let h: AgentCore;

  beforeAll(async () => {
    double = await startAnthropicDouble({
      responder: (seen) =>
        agentModel({
          fact: (text) =>
            /my favourite (\w+) is (\w+)/.exec(text)
              ? `The user's favourite ${/my favourite (\w+) is (\w+)/.exec(text)![1]} is ${/my favourite (\w+) is (\w+)/.exec(text)![2]}`
              : undefined,
        })(seen),
    });
    h = await openAgentCore({
      dataDir: tempDir(),
      provider: 'anthropic',
      url: double.url,
      env: {
        AGENT_CONTEXT_TOKENS: String(WINDOW),
        AGENT_RECENT_TURNS: '6',
        AGENT_ANSWER_TOKENS: '200',
        AGENT_MEMORY_TOKENS: '300',
        AGENT_SUMMARY_TOKENS: '250',
        LOG_LEVEL: 'warn',
      },
    });
  });
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it('stays within the window, compacts once per cycle and loses no turn', async () => {
    let now = new Date('2026-04-01T08:00:00Z');
    // 2,000 turns on a fast simulated clock: past any reply limit, which is not what this measures.
    const agent = createAgent({ ...agentServices(h.core), options: { clock: () => now, settings: { replyRatePerMinute: 0, replyDailyBudget: 0 } } });
    const started = Date.now();
    let maxTotal = 0;
    const sizes: number[] = [];
    for (let i = 0; i < EXCHANGES; i++) {
      now = new Date(now.getTime() + 30_000);
      const text = i % 50 === 0 ? `t${i} my favourite thing${i} is item${i}` : `t${i} a short note about my day number ${i}`;
      const reply = await agent.handle({
        channel: 'terminal',
        scopeKey: 'terminal:long',
        scopeKind: 'user',
        authorName: 'Ana',
        text,
        timestamp: now,
        externalId: `x${i}`,
      });
      expect(reply.degraded).toBeUndefined();
      maxTotal = Math.max(maxTotal, reply.tokens!.total);
      sizes.push(reply.tokens!.prompt);
    }
    const elapsed = Date.now() - started;

    // Every request the agent made fits the window (estimated the same way the agent budgets).
    const estimator = createTokenEstimator('anthropic', h.core.llm.model);
    const requestTotals = h.requests.map((r) => estimator.request(r) + (r.maxTokens ?? 0));
    expect(Math.max(...requestTotals)).toBeLessThanOrEqual(WINDOW);
    expect(maxTotal).toBeLessThanOrEqual(WINDOW);

    // Once per cycle: flush, summary, flush, summary, ...
    const purposes = h.requests.map((r) => r.purpose).filter((p) => p.startsWith('compaction'));
    const cycles = purposes.length / 2;
    expect(purposes).toEqual(Array.from({ length: purposes.length }, (_, k) => (k % 2 === 0 ? 'compaction-flush' : 'compaction-summary')));
    expect(cycles).toBeGreaterThan(20);
    const conversation = await h.core.db.prisma.conversation.findFirstOrThrow({ where: { status: 'open' } });
    const state = conversation.state as { recentTurnIds: string[]; compaction: { cycle: number; compactedTurns: number } };
    expect(state.compaction.cycle).toBe(cycles);

    // No turn lost: each is in the recent window, or was flushed and summarized exactly once.
    const episodes = await h.core.db.prisma.episode.findMany({ where: { conversationId: conversation.id }, orderBy: { turn: 'asc' } });
    expect(episodes).toHaveLength(TURNS);
    const flushed = new Map<string, number>();
    const summarized = new Map<string, number>();
    for (const r of h.requests) {
      const text = r.messages.at(-1)!.content;
      if (r.purpose === 'compaction-flush') for (const t of flushTurns(text)) flushed.set(t.text, (flushed.get(t.text) ?? 0) + 1);
      if (r.purpose === 'compaction-summary') {
        for (const line of (/New turns:\n([\s\S]*)\n\nNew summary:/.exec(text)?.[1] ?? '').split('\n')) {
          const content = line.replace(/^[^:]*: /, '');
          summarized.set(content, (summarized.get(content) ?? 0) + 1);
        }
      }
    }
    const recent = new Set(state.recentTurnIds);
    const lost = episodes.filter((e) => !recent.has(e.id) && !(flushed.get(e.content) === 1 && summarized.get(e.content) === 1));
    expect(lost.map((e) => e.content)).toEqual([]);
    expect(state.compaction.compactedTurns + recent.size).toBe(TURNS);

    // The flushed facts are memories, backed by the person's own turns.
    const favourites = await h.core.db.prisma.memory.count({ where: { content: { startsWith: "The user's favourite thing" } } });
    expect(favourites).toBe(EXCHANGES / 50);
    expect(await h.core.db.prisma.memory.count({ where: { content: { contains: 'jazz' } } })).toBe(0);

    const average = Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length);
    process.stdout.write(
      `2,000-turn run: ${elapsed} ms, ${cycles} compactions, max prompt+reserve ${maxTotal} / ${WINDOW}, max request ${Math.max(...requestTotals)}, mean prompt ${average}, final summary ${estimator.text(conversation.summary ?? '')} tokens, ${recent.size} turns in full, ${favourites} flushed facts\n`,
    );
  }, 900_000); // ~25 s alone; it passed 300 s when the cores were shared with five other test runs
});
