/**
 * The CLI as a person runs it (child processes on a real SQLite file, the model a loopback
 * Anthropic double): `sleep` says what the run learned in the digest's words, and counts read as
 * English ("1 daily log", "1 episode", never "(s)").
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

describe('CLI wording', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        const prompt = seen.messages.at(-1)?.text ?? '';
        const cello = /^(E\d+) .*cello/m.exec(prompt)?.[1];
        if (!(seen.system ?? '').includes('memory consolidation system') || !cello) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({ new: [{ category: 'goal', content: 'Ana is learning the cello', confidence: 0.9, source: 'stated', episodes: [cello] }] }),
        };
      },
    });
    dir = tempDir();
    env = cleanEnv({ DATA_DIR: path.join(dir, 'data'), LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-cli-000000000', ANTHROPIC_BASE_URL: model.url });
    const file = path.join(dir, 'one.jsonl');
    fs.writeFileSync(
      file,
      `${JSON.stringify({ content: 'I started learning the cello', author: 'Ana', timestamp: '2026-03-02T18:40:00Z', externalId: 'm1' })}\n`,
    );
    expect((await runCli(['import', '--scope', 'ana', file], env)).code).toBe(0);
  });
  afterAll(async () => model?.stop());

  it('sleep prints what it learned, in the digest words, with the memory ids', async () => {
    const result = await runCli(['sleep', '--scope', 'ana'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^succeeded: 1 episode consolidated\n1 episode, 1 model call, tokens in \d+ \/ out \d+\n\nNew\n\n1\. Ana is learning the cello {3}\(memory [0-9a-f-]{36}\)\n$/,
    );
    expect(result.stdout).not.toContain('(s)');
    const json = JSON.parse((await runCli(['memories', '--scope', 'ana', '--json'], env)).stdout) as { memories: Array<{ id: string; content: string }> };
    const id = json.memories.find((m) => m.content === 'Ana is learning the cello')!.id;
    expect(result.stdout).toContain(`(memory ${id})`);
  });

  it('export --format markdown counts one daily log as one', async () => {
    const file = path.join(dir, 'ben.jsonl');
    fs.writeFileSync(file, `${JSON.stringify({ content: 'hello there', author: 'Ben', timestamp: '2026-03-02T18:40:00Z' })}\n`);
    expect((await runCli(['import', '--scope', 'ben', file], env)).code).toBe(0);
    const out = path.join(dir, 'md');
    const result = await runCli(['export', '--scope', 'ben', '--format', 'markdown', '--out', out], env);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`wrote 2 files to ${out}: MEMORY.md and 1 daily log in memory/`);
  });
});
