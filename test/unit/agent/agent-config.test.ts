import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../../src/config/load-config';
import { tempDir } from '../../support/databases';

const load = (env: Record<string, string>) => loadConfig({ env, envFile: false, cwd: tempDir() });

describe('agent settings', () => {
  it('defaults: the model window, 2,000 memory tokens, 20 recent turns, 1,024 answer tokens, 60 idle minutes, no model summary of ended conversations, hybrid, 20 replies a minute and 500 a day', () => {
    expect(load({}).agent).toEqual({
      contextTokens: undefined,
      memoryTokens: 2_000,
      summaryTokens: 1_000,
      goalTokens: 300,
      recentTurns: 20,
      answerTokens: 1_024,
      idleEndMinutes: 60,
      endSummary: false,
      compactionStrategy: 'hybrid',
      compactionCooldownMs: 300_000,
      replyRatePerMinute: 20,
      replyDailyBudget: 500,
    });
  });

  it('reads every budget and refuses bad values by name', () => {
    const agent = load({
      AGENT_CONTEXT_TOKENS: '8000',
      AGENT_RECENT_TURNS: '6',
      AGENT_COMPACTION_STRATEGY: 'sliding-window',
      AGENT_COMPACTION_COOLDOWN_SECONDS: '0',
    }).agent;
    expect(agent).toMatchObject({ contextTokens: 8_000, recentTurns: 6, compactionStrategy: 'sliding-window', compactionCooldownMs: 0 });
    let error: unknown;
    try {
      load({ AGENT_CONTEXT_TOKENS: '10', AGENT_COMPACTION_STRATEGY: 'magic' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const settings = (error as ConfigError).issues.map((i) => i.setting).sort();
    expect(settings).toEqual(['AGENT_COMPACTION_STRATEGY', 'AGENT_CONTEXT_TOKENS']);
  });
});
