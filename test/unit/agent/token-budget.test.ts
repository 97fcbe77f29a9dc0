import { describe, expect, it } from '@jest/globals';
import { createTokenEstimator, fitText, modelFamily, resolveReplyBudget } from '../../../src/agent/token-budget';
import { estimateTokens } from '../../../src/shared/tokens';

describe('token accounting', () => {
  it('picks the family factor from the model name, cautious for unknown families', () => {
    expect(modelFamily('anthropic', 'claude-sonnet-4-6')).toBe('claude');
    expect(modelFamily('ollama', 'llama3.2:3b')).toBe('llama');
    expect(modelFamily('ollama', 'qwen2.5')).toBe('qwen');
    expect(modelFamily('ollama', 'some-new-model')).toBe('unknown');
    const text = 'The quick brown fox jumps over the lazy dog, twice.';
    expect(createTokenEstimator('anthropic', 'claude-x').text(text)).toBe(estimateTokens(text));
    expect(createTokenEstimator('ollama', 'mystery').text(text)).toBeGreaterThan(estimateTokens(text));
  });

  it('counts a request: system, messages with framing, tool calls and tool schemas', () => {
    const e = createTokenEstimator('anthropic', 'claude');
    const bare = e.request({ system: 'sys', messages: [{ role: 'user', content: 'hello there' }] });
    const withTools = e.request({
      system: 'sys',
      messages: [{ role: 'user', content: 'hello there' }],
      tools: [{ name: 'memory_search', description: 'search', parameters: { type: 'object' } }],
    });
    expect(withTools).toBeGreaterThan(bare);
    expect(e.message({ role: 'assistant', content: '', toolCalls: [{ id: '1', name: 'memory_get', arguments: { id: 'abc' } }] })).toBeGreaterThan(
      e.message({ role: 'assistant', content: '' }),
    );
  });

  it('shrinks the configured budget to a small window, the answer to at most a quarter', () => {
    const settings = { memoryTokens: 2_000, summaryTokens: 1_000, goalTokens: 300, answerTokens: 1_024, recentTurns: 20 };
    expect(resolveReplyBudget(settings, 200_000)).toEqual({
      contextTokens: 200_000,
      answerTokens: 1_024,
      memoryTokens: 2_000,
      summaryTokens: 1_000,
      goalTokens: 300,
      recentTurns: 20,
    });
    const small = resolveReplyBudget({ ...settings, contextTokens: 2_000 }, 8_192);
    expect(small.contextTokens).toBe(2_000);
    expect(small.answerTokens).toBe(500);
    expect(small.memoryTokens + small.summaryTokens + small.goalTokens + small.answerTokens).toBeLessThan(2_000);
    // A setting larger than the model's window cannot make requests the model refuses.
    expect(resolveReplyBudget({ ...settings, contextTokens: 1_000_000 }, 8_192).contextTokens).toBe(8_192);
  });

  it('cuts text to a token ceiling, keeping the head or the tail', () => {
    const e = createTokenEstimator('anthropic', 'claude');
    const text = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const head = fitText(text, 20, e);
    const tail = fitText(text, 20, e, 'tail');
    expect(e.text(head)).toBeLessThanOrEqual(20);
    expect(head.startsWith('word0 ')).toBe(true);
    expect(tail.endsWith('word199')).toBe(true);
    expect(fitText('short', 20, e)).toBe('short');
  });
});
