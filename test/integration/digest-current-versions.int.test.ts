/**
 * The digest and the summary of a sleep run list a change once, by its current version: a memory
 * learned and then corrected in the same period is not also "New" in its outdated words, and a
 * correction later corrected again is not "Updated" to a version that no longer holds. The CLI as
 * a person runs it (child processes on a real SQLite file), the model a loopback Anthropic double.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

const CITIES = ['Lisbon', 'Porto', 'Braga'] as const;

describe('digest lists current versions only', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        const prompt = seen.messages.at(-1)?.text ?? '';
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: JSON.stringify({ nothing: 'not asked' }) };
        const city = CITIES.find((c) => new RegExp(`^E\\d+ .*moved to ${c}`, 'm').test(prompt));
        const episode = /^(E\d+) /m.exec(prompt)?.[1];
        const known = /^(M\d+) .*Ana lives in/m.exec(prompt)?.[1];
        if (!city || !episode) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        const content = `Ana lives in ${city}`;
        return {
          kind: 'text',
          text: JSON.stringify(
            known
              ? { update: [{ memory: known, content, episodes: [episode], reason: 'she moved' }] }
              : { new: [{ category: 'fact', content, confidence: 0.9, source: 'stated', episodes: [episode] }] },
          ),
        };
      },
    });
    dir = tempDir();
    env = cleanEnv({
      DATA_DIR: path.join(dir, 'data'),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-test-cli-000000000',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
    });
  });
  afterAll(async () => model?.stop());

  it('a memory learned then corrected twice shows once, as Updated to its current words', async () => {
    const summaries: string[] = [];
    for (const [i, city] of CITIES.entries()) {
      const file = path.join(dir, `${city}.jsonl`);
      fs.writeFileSync(
        file,
        `${JSON.stringify({ content: `I just moved to ${city}`, author: 'Ana', timestamp: `2026-03-0${i + 2}T18:40:00Z`, externalId: city })}\n`,
      );
      expect((await runCli(['import', '--scope', 'ana', file], env)).code).toBe(0);
      const sleep = await runCli(['sleep', '--scope', 'ana', '--json'], env);
      expect(sleep.code).toBe(0);
      summaries.push(sleep.stdout);
    }
    const digest = await runCli(['digest', '--scope', 'ana', '--json'], env);
    expect(digest.code).toBe(0);
    const items = (JSON.parse(digest.stdout) as { items: Array<{ action: string; text: string }> }).items;
    process.stderr.write(`digest-current-versions: ${JSON.stringify(items.map((i) => `${i.action}: ${i.text}`))}\n`);
    expect(items.map((i) => ({ action: i.action, text: i.text }))).toEqual([{ action: 'update', text: 'Ana lives in Braga (was: Ana lives in Porto)' }]);
    const memories = JSON.parse((await runCli(['memories', '--scope', 'ana', '--json'], env)).stdout) as { memories: Array<{ content: string }> };
    expect(memories.memories.map((m) => m.content)).toEqual(['Ana lives in Braga']);
  }, 240_000);
});
