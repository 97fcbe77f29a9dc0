/**
 * Replies do not spend the sleep budget: a talkative day (replies reported at 40,000 input tokens
 * each by the loopback Anthropic double) above SLEEP_DAILY_TOKEN_BUDGET leaves the night's
 * consolidation its budget. `cli chat` and `cli sleep` as a person runs them (child processes on a
 * real SQLite file).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { migratedDataDir } from '../support/databases';
import { cleanEnv, runCli, runTs } from '../support/run-process';

describe('the sleep budget and replies', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: 'Lovely.', inputTokens: 40_000 };
        const episode = /^(E\d+) .*tomatoes/m.exec(seen.messages.at(-1)?.text ?? '')?.[1];
        if (!episode) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({ new: [{ category: 'interest', content: 'Ann grows tomatoes', confidence: 0.9, source: 'stated', episodes: [episode] }] }),
        };
      },
    });
    env = cleanEnv({
      DATA_DIR: migratedDataDir(),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-test-cli-000000000',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
      SLEEP_DAILY_TOKEN_BUDGET: '50000',
    });
  });
  afterAll(async () => model?.stop());

  it('a day of replies above the sleep budget does not defer consolidation', async () => {
    const chat = await runTs(
      'src/cli/index.ts',
      ['chat', '--name', 'Ann'],
      env,
      undefined,
      'I grow tomatoes on my balcony\nthe basil is doing well too\n/quit\n',
    );
    expect(chat.code).toBe(0);
    const sleep = await runCli(['sleep', '--scope', 'terminal:Ann'], env);
    process.stderr.write(`sleep-budget-replies: ${JSON.stringify(sleep.stdout.split('\n')[0])}\n`);
    expect(sleep.code).toBe(0);
    expect(sleep.stdout).toMatch(/^succeeded: /);
    expect(sleep.stdout).toContain('Ann grows tomatoes');
  }, 240_000);
});
