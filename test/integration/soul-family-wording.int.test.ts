/**
 * Words a person or operator reads from the CLI (child processes on a real SQLite file, the model
 * a loopback Anthropic double):
 * - a husband is family in the soul, not an "acquaintance" (the favorability every new person
 *   starts at): by the relation the consolidation answer gives (the model path), and by the
 *   owner's own words in an observation when the answer gives none (the rule path); a colleague
 *   stays what favorability says;
 * - an error message starts with a capital letter (its code unchanged).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

describe('family in the soul, capitals in errors', () => {
  const root = tempDir('nocturne-soul-family-');
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: JSON.stringify({ entities: [] }) };
        const prompt = seen.messages.at(-1)?.text ?? '';
        const tom = /^(E\d+) .*husband Tom/m.exec(prompt)?.[1];
        const lea = /^(E\d+) .*wife Lea/m.exec(prompt)?.[1];
        const raj = /^(E\d+) .*colleague Raj/m.exec(prompt)?.[1];
        if (!tom || !lea || !raj) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            entities: [
              { name: 'Tom', kind: 'person', relation: 'husband', observations: ['cooks on Sundays'], episodes: [tom] },
              { name: 'Lea', kind: 'person', observations: ["the user's wife"], episodes: [lea] },
              { name: 'Raj', kind: 'person', relation: 'colleague', observations: ['works with the user'], episodes: [raj] },
            ],
          }),
        };
      },
    });
    env = cleanEnv({
      DATA_DIR: path.join(root, 'data'),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-ant-test-soul-family',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
    });
    const file = path.join(root, 'family.jsonl');
    const lines = [
      { content: 'My husband Tom made paella again on Sunday', externalId: 'f1' },
      { content: 'My wife Lea starts her new job at the clinic on Monday', externalId: 'f2' },
      { content: 'My colleague Raj reviewed the budget with me today', externalId: 'f3' },
    ].map((l, i) => JSON.stringify({ ...l, author: 'Ana', timestamp: `2026-03-0${i + 2}T18:00:00Z` }));
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    expect((await runCli(['import', '--scope', 'ana', file], env)).code).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await model?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a husband and a wife are family, a colleague is not', async () => {
    expect((await runCli(['sleep', '--scope', 'ana'], env)).code).toBe(0);
    const soul = (await runCli(['soul', '--scope', 'ana'], env)).stdout;
    const people = soul.split('\n').filter((line) => /^- (Tom|Lea|Raj) \(/.test(line));
    process.stderr.write(`soul-family: ${JSON.stringify(people)}\n`);
    expect(people.find((l) => l.startsWith('- Tom'))).toMatch(/^- Tom \(person, family, /);
    expect(people.find((l) => l.startsWith('- Lea'))).toMatch(/^- Lea \(person, family, /);
    expect(people.find((l) => l.startsWith('- Raj'))).toMatch(/^- Raj \(person, acquaintance, /);
  }, 240_000);

  it('an error message starts with a capital letter; its code is unchanged', async () => {
    const missing = await runCli(['memories', '--scope', 'nobody-here'], env);
    const json = await runCli(['memories', '--scope', 'nobody-here', '--json'], env);
    process.stderr.write(`soul-family: ${JSON.stringify(missing.stderr.split('\n')[0])}\n`);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/^error: [A-Z]/);
    const answer = JSON.parse(json.stdout) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe('not_found');
    expect(answer.error.message).toMatch(/^[A-Z]/);
  }, 120_000);
});
