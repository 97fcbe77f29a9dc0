/**
 * `npm run cli -- chat` is a conversation on the terminal: what the person sees (stdout and
 * stderr of the child process) is the conversation and nothing else. The service's log lines go
 * to the log file (DATA_DIR/nocturne.log unless LOG_FILE says otherwise), and leaving with /quit
 * is not a failure worth a warning. Driven against the loopback Anthropic double.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runTs } from '../support/run-process';

describe('CLI chat shows the conversation only', () => {
  const root = tempDir('nocturne-chat-screen-');
  let double: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Lovely, noted.' }) });
    env = cleanEnv({
      DATA_DIR: path.join(root, 'data'),
      ANTHROPIC_API_KEY: 'sk-ant-test-chat-screen',
      ANTHROPIC_BASE_URL: double.url,
      SLEEP_ENABLED: 'false',
    });
  }, 60_000);

  afterAll(async () => {
    await double?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('prints no log line on the terminal and no warning at /quit; the log file has them', async () => {
    const input = 'I grow tomatoes on my balcony.\nMy sister Ines lives in Porto.\n/quit\n';
    const chat = await runTs('src/cli/index.ts', ['chat', '--name', 'Ann'], env, undefined, input);
    process.stderr.write(`chat-screen: exit ${chat.code}, stderr ${chat.stderr.length} chars, stdout lines ${chat.stdout.split('\n').length}\n`);
    expect(chat.code).toBe(0);
    expect(chat.stdout).toContain('Lovely, noted.');
    const screen = `${chat.stdout}\n${chat.stderr}`;
    expect(screen.split('\n').filter((line) => line.trimStart().startsWith('{'))).toEqual([]);
    expect(screen).not.toMatch(/embedding thread was closed/);
    expect(chat.stderr).toBe('');
    const logFile = fs.readFileSync(path.join(root, 'data', 'nocturne.log'), 'utf8');
    expect(logFile).toContain('applied database migrations');
    expect(logFile).not.toMatch(/embedding thread was closed/);
  }, 180_000);
});
