/**
 * `/settings` in the terminal conversation (`npm run cli -- chat` as a child process, the real
 * agent answering through the Anthropic SDK against the loopback double): the person changes
 * capped mode, the sleep window and both daily budgets with chat commands, a bad value changes
 * nothing, the CLI's `settings` (another child process) reads what the chat set and the chat
 * shows what the CLI set. The reply budget takes effect at the very next message: with a budget
 * of 2 the third message is stored but not sent to the model, and the person is told once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { migratedDataDir, tempDir } from '../support/databases';
import { cleanEnv, runCli, runTs } from '../support/run-process';

const KEY = 'terminal:ann';
const ANSWER = 'Lovely, noted.';

describe('/settings in the terminal conversation', () => {
  const root = tempDir('nocturne-terminal-settings-');
  let double: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  const chat = (...lines: string[]) => runTs('src/cli/index.ts', ['chat', '--scope', KEY, '--name', 'Ann'], env, undefined, `${lines.join('\n')}\n/quit\n`);

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: ANSWER }) });
    env = cleanEnv({
      DATA_DIR: migratedDataDir(path.join(root, 'data')),
      ANTHROPIC_API_KEY: 'sk-ant-test-terminal-settings',
      ANTHROPIC_BASE_URL: double.url,
      SLEEP_ENABLED: 'false',
    });
  }, 60_000);
  afterAll(async () => {
    await double?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('sets every setting from the chat; the reply budget holds from the next message; the CLI reads and changes the same', async () => {
    const first = await chat(
      '/settings',
      '/settings capped on',
      '/settings sleep 01:00-03:00',
      '/settings budget sleep 1234',
      '/settings budget replies 2',
      '/settings budget replies -1',
      '/settings sleep 5:15-6',
      'Hello there',
      'I like figs',
      'Still there?',
    );
    expect(first.code).toBe(0);
    const out = first.stdout;
    const order = [
      '• Reply budget: 500 replies a day (the default)',
      '• Capped memory: on — I keep at most 10 memories, one per conversation',
      '• Sleep window: 01:00-03:00 UTC.',
      '• Sleep budget: 1,234 model tokens a day',
      '• Reply budget: 2 replies a day',
      'Nothing changed: reply budget: -1 is not a whole number of replies from 0 (unlimited) to 1000000.',
      'Nothing changed: sleep window: "5:15-6" does not start and end on the hour',
      ANSWER,
      "We've reached today's limit of 2 replies. I'm saving everything you send",
    ].map((s) => out.indexOf(s));
    expect({ order, out }).toEqual({ order: [...order].sort((a, b) => a - b), out });
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(out.split(ANSWER)).toHaveLength(3);
    // Two replies, two model calls: the third message never reached the model.
    expect(double.requests).toHaveLength(2);

    const read = await runCli(['settings', '--scope', KEY, '--json'], env);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.stdout)).toMatchObject({
      cappedMode: true,
      memoryCap: 10,
      sleepWindow: '01:00-03:00',
      sleepDailyTokenBudget: 1234,
      replyDailyBudget: 2,
      replyDailyBudgetIsDefault: false,
    });
    const scopes = JSON.parse((await runCli(['scopes', '--json'], env)).stdout) as { scopes: Array<{ key: string; episodes: number }> };
    // Every message stored, the refused one too: 3 from Ann, 2 replies.
    expect(scopes.scopes.find((s) => s.key === KEY)?.episodes).toBe(5);

    // The CLI lifts the budget (0: unlimited); the next chat is answered again and shows it.
    expect((await runCli(['settings', '--scope', KEY, '--reply-budget', '0', '--capped', 'off'], env)).code).toBe(0);
    const second = await chat('Are you back?', '/settings');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(ANSWER);
    expect(second.stdout).toContain('• Reply budget: unlimited replies a day');
    expect(second.stdout).toContain('• Capped memory: off');
    expect(double.requests).toHaveLength(3);

    const audit = await runCli(['audit', '--scope', KEY, '--json'], env);
    expect(audit.stdout.match(/"action":"settings"/g)).toHaveLength(5);
  }, 300_000);
});
