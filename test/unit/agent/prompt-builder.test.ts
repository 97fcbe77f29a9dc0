import { describe, expect, it } from '@jest/globals';
import { buildPrompt, HEADINGS, type PromptTurn } from '../../../src/agent/prompt-builder';
import { createTokenEstimator, resolveReplyBudget } from '../../../src/agent/token-budget';
import { MEMORY_TOOL_DEFINITIONS } from '../../../src/agent/memory-tools';

const estimator = createTokenEstimator('anthropic', 'claude');
const settings = { memoryTokens: 200, summaryTokens: 150, goalTokens: 60, answerTokens: 200, recentTurns: 4 };

function turns(count: number): PromptTurn[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `t${i}`,
    role: i % 2 === 0 ? 'user' : 'agent',
    author: 'Ana',
    content: `turn ${i}: ${'words '.repeat(20)}`,
  }));
}

describe('buildPrompt', () => {
  const base = {
    systemPrompt: 'You are a test assistant.',
    soul: '# Soul of Ana\n- likes coffee',
    memories: [
      { id: 'm1', kind: 'memory' as const, text: '[preference, confidence 0.90] likes coffee' },
      { id: 'e1', kind: 'episode' as const, text: '(earlier) Ana: hello' },
    ],
    goals: ['run a marathon'],
    summary: 'They talked about the weather.',
    tools: MEMORY_TOOL_DEFINITIONS,
    estimator,
  };

  it('puts the parts in seed 000 order and accounts for every token', () => {
    const built = buildPrompt({ ...base, turns: turns(5), budget: resolveReplyBudget(settings, 100_000) });
    const at = (s: string) => built.system.indexOf(s);
    expect(at('You are a test')).toBe(0);
    expect(at(HEADINGS.soul)).toBeLessThan(at(HEADINGS.memories));
    expect(at(HEADINGS.memories)).toBeLessThan(at(HEADINGS.goals));
    expect(at(HEADINGS.goals)).toBeLessThan(at(HEADINGS.summary));
    expect(built.memoryIds).toEqual(['m1']);
    expect(built.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    const t = built.tokens;
    expect(t.system + t.soul + t.tools + t.memories + t.goals + t.summary + t.recent).toBe(t.prompt);
    expect(t.prompt).toBe(estimator.request({ system: built.system, messages: built.messages, tools: base.tools }));
  });

  it("keeps the newest turns when they do not all fit, starting with a person's turn, within the window", () => {
    const budget = resolveReplyBudget({ ...settings, contextTokens: 1_400 }, 100_000);
    const built = buildPrompt({ ...base, turns: turns(41), budget });
    expect(built.omittedTurns).toBeGreaterThan(0);
    expect(built.turnIds.at(-1)).toBe('t40');
    expect(built.messages[0]!.role).toBe('user');
    expect(built.tokens.total).toBeLessThanOrEqual(1_400);
  });

  it('cuts an oversized message rather than leaving it out, and merges consecutive turns of one role', () => {
    const budget = resolveReplyBudget({ ...settings, contextTokens: 1_200 }, 100_000);
    const huge: PromptTurn = { id: 'big', role: 'user', author: null, content: 'lorem ipsum '.repeat(2_000) };
    const built = buildPrompt({ ...base, turns: [{ id: 'a', role: 'user', author: null, content: 'first' }, huge], budget });
    expect(built.tokens.total).toBeLessThanOrEqual(1_200);
    expect(built.messages.at(-1)!.content.endsWith('…')).toBe(true);
    const merged = buildPrompt({
      ...base,
      turns: [
        { id: 'a', role: 'user', author: null, content: 'one' },
        { id: 'b', role: 'user', author: null, content: 'two' },
      ],
      budget,
    });
    expect(merged.messages).toEqual([{ role: 'user', content: 'one\n\ntwo' }]);
  });
});
