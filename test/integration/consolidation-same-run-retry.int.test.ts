/**
 * An answer that teaches nothing does not cost the person a night: the CLI's `sleep` (a child
 * process on a real SQLite file, the model a loopback Anthropic double) asks again about half as
 * much at once, so what was said is learned in the same run; a model that cannot answer even
 * then leaves the episodes for a later run after at most two more calls a prompt.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

/** Most of the person's turns the double reads right in one prompt; more, and it names an episode where a memory belongs. */
const READS_RIGHT = 2;
/** Several CLI processes a test, each loading the embedding model: generous on a loaded machine. */
const CLI_TIMEOUT_MS = 400_000;

const LINES = ['I grow tomatoes on my balcony', 'My brother Tiago is a pilot', 'I prefer trains over planes', 'I am allergic to peanuts'];

describe('consolidation asks again at once when an answer teaches nothing', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  /** How many of the person's turns each consolidation prompt held, in order. */
  const prompts: number[] = [];
  let reliable = true;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: '{}' };
        const users = [...(seen.messages[0]?.text ?? '').matchAll(/^(E\d+) \S+ \S+ user[^:]*: (.*)$/gm)].map((m) => ({ id: m[1]!, text: m[2]! }));
        prompts.push(users.length);
        // Every operation refused: an episode's E-id where the memory's M-id belongs.
        if (!reliable || users.length > READS_RIGHT)
          return { kind: 'text', text: JSON.stringify({ reinforce: [{ memory: users[0]!.id, episodes: [users[0]!.id], reason: 'said again' }] }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            new: users.map((u) => ({ category: 'fact', content: `Ana: ${u.text}`, confidence: 0.9, source: 'stated', episodes: [u.id] })),
          }),
        };
      },
    });
    dir = tempDir();
    env = cleanEnv({ DATA_DIR: path.join(dir, 'data'), LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-cli-000000000', ANTHROPIC_BASE_URL: model.url });
  });
  afterAll(async () => model?.stop());

  async function importLines(scope: string): Promise<void> {
    const file = path.join(dir, `${scope}.jsonl`);
    const rows = LINES.map((content, i) =>
      JSON.stringify({ content, author: 'Ana', conversationId: `${scope}-c1`, externalId: `${scope}-${i}`, timestamp: `2026-03-02T18:4${i}:00Z` }),
    );
    fs.writeFileSync(file, `${rows.join('\n')}\n`);
    expect((await runCli(['import', '--scope', scope, file], env)).code).toBe(0);
  }

  async function consolidated(scope: string): Promise<boolean[]> {
    const { episodes } = JSON.parse((await runCli(['episodes', '--scope', scope, '--json'], env)).stdout) as { episodes: Array<{ consolidated: boolean }> };
    return episodes.map((e) => e.consolidated);
  }

  it(
    'a prompt whose every operation is refused is asked again in halves, and everything is learned in the same run',
    async () => {
      await importLines('ana');
      reliable = true;
      prompts.length = 0;
      const result = await runCli(['sleep', '--scope', 'ana', '--json'], env);
      expect({ code: result.code, status: (JSON.parse(result.stdout) as { outcome: { status: string } }).outcome.status }).toEqual({
        code: 0,
        status: 'succeeded',
      });
      // Four turns (every operation refused), then two and two, read right.
      expect(prompts).toEqual([4, 2, 2]);
      expect(await consolidated('ana')).toEqual([true, true, true, true]);
      const memories = JSON.parse((await runCli(['memories', '--scope', 'ana', '--json'], env)).stdout) as { memories: Array<{ content: string }> };
      expect(memories.memories.map((m) => m.content).sort()).toEqual(LINES.map((l) => `Ana: ${l}`).sort());
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a model that cannot answer even then costs two more calls and leaves the episodes for a later run, an attempt counted',
    async () => {
      await importLines('ben');
      reliable = false;
      prompts.length = 0;
      const result = await runCli(['sleep', '--scope', 'ben', '--json'], env);
      expect(result.code).toBe(1);
      expect((JSON.parse(result.stdout) as { outcome: { status: string } }).outcome.status).toBe('failed');
      expect(prompts).toEqual([4, 2, 2]);
      expect(await consolidated('ben')).toEqual([false, false, false, false]);
      // The attempt was counted: the next run starts from the halves and asks again about quarters.
      prompts.length = 0;
      expect((await runCli(['sleep', '--scope', 'ben', '--json'], env)).code).toBe(1);
      expect(prompts).toEqual([2, 1, 1, 2, 1, 1]);
    },
    CLI_TIMEOUT_MS,
  );
});
