/**
 * What a person told the agent reaches the reply: facts imported as dated three days ago (past the
 * 24-hour window of recent turns, and not consolidated: sleep is off) are in the request the model
 * is sent when the person asks about them in `npm run -s cli -- chat`, a child process reading
 * stdin, against the loopback Anthropic double that records every request. Before the reply
 * context searched the scope's episodes, the request held neither fact.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runTs } from '../support/run-process';
import { runCliToEnd } from './crash-support';

const DAY_MS = 86_400_000;
const QUESTION = "What is my sister's cat called?";

describe('reply context from everything said (chaos: CLI chat, loopback model)', () => {
  const root = tempDir('nocturne-chaos-reply-context-');
  let double: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    env = cleanEnv({
      DATA_DIR: path.join(root, 'data'),
      ANTHROPIC_API_KEY: 'sk-ant-test-reply-context',
      ANTHROPIC_BASE_URL: double.url,
      SLEEP_ENABLED: 'false',
      LOG_LEVEL: 'warn',
    });
  }, 60_000);

  afterAll(async () => {
    await double?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a fact imported as said three days ago is in the request for a question about it', async () => {
    const at = (minutes: number) => new Date(Date.now() - 3 * DAY_MS + minutes * 60_000).toISOString();
    const file = path.join(root, 'facts.jsonl');
    fs.writeFileSync(
      file,
      `${[
        { content: "My sister's cat is called Pumpernickel.", timestamp: at(0), externalId: 'fact-1' },
        { content: 'I started a new job at the Lisbon aquarium.', timestamp: at(1), externalId: 'fact-2' },
        { content: 'We are planning a trip to Porto in the spring.', timestamp: at(2), externalId: 'fact-3' },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n')}\n`,
    );
    await runCliToEnd(['import', '--scope', 'terminal:me', file], env);

    const chat = await runTs('src/cli/index.ts', ['chat', '--scope', 'terminal:me'], env, undefined, `${QUESTION}\n/quit\n`);
    expect(chat.code).toBe(0);
    const replies = double.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.text.includes(QUESTION)));
    expect(replies.length).toBeGreaterThanOrEqual(1);
    const sent = [replies[0]!.system ?? '', ...replies[0]!.messages.map((m) => m.text)].join('\n');
    process.stderr.write(`reply-context: first reply request holds Pumpernickel: ${sent.includes('Pumpernickel')}, system ${sent.length} chars\n`);
    expect(sent).toContain('Pumpernickel');
  }, 180_000);
});
