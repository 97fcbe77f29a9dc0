/**
 * A memory whose content is only a secret is not kept: the person pasted a key, the model (which
 * sees it as [REDACTED]) proposes "Marta's key for the staging server is [REDACTED]", and the
 * memory would be an empty line of the profile. The CLI as a person runs it (child processes on a
 * real SQLite file), the model a loopback Anthropic double; a memory that mentions a secret in
 * passing, from the same batch, is kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

const KEY = `sk-ant-api03-${'Qx9'.repeat(16)}`;

describe('a memory that is only a secret', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        const prompt = seen.messages.at(-1)?.text ?? '';
        const key = /^(E\d+) .*staging server/m.exec(prompt)?.[1];
        const rota = /^(E\d+) .*every Monday/m.exec(prompt)?.[1];
        if (!key || !rota) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            new: [
              { category: 'fact', content: "Marta's key for the staging server is [REDACTED]", confidence: 0.9, source: 'stated', episodes: [key] },
              { category: 'routine', content: 'Marta rotates the staging server key every Monday', confidence: 0.9, source: 'stated', episodes: [rota] },
            ],
          }),
        };
      },
    });
    const dir = tempDir();
    env = cleanEnv({
      DATA_DIR: path.join(dir, 'data'),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-test-cli-000000000',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
    });
    const file = path.join(dir, 'key.jsonl');
    fs.writeFileSync(
      file,
      `${[
        { content: `my key for the staging server is ${KEY}`, author: 'Marta', timestamp: '2026-03-02T18:40:00Z', externalId: 'k1' },
        { content: 'I rotate that key every Monday', author: 'Marta', timestamp: '2026-03-02T18:41:00Z', externalId: 'k2' },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n')}\n`,
    );
    expect((await runCli(['import', '--scope', 'marta', file], env)).code).toBe(0);
  });
  afterAll(async () => model?.stop());

  it('is not kept; the rest of the batch is', async () => {
    const sleep = await runCli(['sleep', '--scope', 'marta'], env);
    expect(sleep.code).toBe(0);
    const memories = JSON.parse((await runCli(['memories', '--scope', 'marta', '--json'], env)).stdout) as { memories: Array<{ content: string }> };
    process.stderr.write(`secret-only: ${JSON.stringify(memories.memories.map((m) => m.content))}\n`);
    expect(memories.memories.map((m) => m.content)).toEqual(['Marta rotates the staging server key every Monday']);
    const soul = await runCli(['soul', '--scope', 'marta'], env);
    expect(soul.stdout).not.toContain('[REDACTED]');
  }, 240_000);
});
