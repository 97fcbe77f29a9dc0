/**
 * Live chat gets the metadata imported messages come with (topics, entities, emotional tone, task
 * type), learned by the consolidation call that already reads the batch, at no extra call. A
 * person chats with `cli chat` (a child process on a real SQLite file), `cli sleep` consolidates
 * against a loopback Anthropic double that describes the episodes in its answer, and `cli search
 * --topic/--entity` then finds the live-chat turn. The metadata rides on each episode's
 * importance entry; the same answer carries fields the model got wrong (a topic list that is a
 * string, a tone that is a number) and an invented E-id: they are left out, without a repair
 * turn, and the rest of the batch, memory included, is applied.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli, runTs } from '../support/run-process';

const SCOPE = 'terminal:Ann';
const isConsolidation = (system: string | undefined) => (system ?? '').includes('memory consolidation system');

interface SearchJson {
  results: Array<{ kind: string; content: string }>;
}

describe('episode metadata learned during sleep', () => {
  const root = tempDir('nocturne-episode-metadata-');
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!isConsolidation(seen.system)) return { kind: 'text', text: 'Lovely, noted.' };
        const prompt = seen.messages.at(-1)?.text ?? '';
        const tomatoes = /^(E\d+) .*tomatoes/m.exec(prompt)?.[1];
        const sister = /^(E\d+) .*sister Ines/m.exec(prompt)?.[1];
        if (!tomatoes || !sister) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            new: [
              {
                category: 'relationship',
                content: 'The user has a sister named Ines who lives in Porto',
                confidence: 0.9,
                source: 'stated',
                episodes: [sister],
              },
            ],
            importance: [
              { episode: tomatoes, score: 0.4, topics: ['Gardening', 'balcony'], entities: [], emotionalTone: 'proud', taskType: 'chat' },
              { episode: sister, score: 0.6, topics: 'family', entities: ['Ines', 'Porto'], emotionalTone: 42, taskType: 'chat' },
              { episode: 'E99', score: 0.5, topics: ['invented'] },
            ],
          }),
        };
      },
    });
    env = cleanEnv({
      DATA_DIR: path.join(root, 'data'),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-ant-test-episode-metadata',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
    });
    const input = 'I grow tomatoes on my balcony and they are finally red.\nMy sister Ines lives in Porto, she visits in May.\n/quit\n';
    const chat = await runTs('src/cli/index.ts', ['chat', '--name', 'Ann'], env, undefined, input);
    expect(chat.code).toBe(0);
  }, 180_000);

  afterAll(async () => {
    await model?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('search by topic and entity finds the live-chat turns after one consolidation call', async () => {
    model.reset();
    const sleep = await runCli(['sleep', '--scope', SCOPE], env);
    expect(sleep.code).toBe(0);
    const consolidationCalls = model.requests.filter((r) => isConsolidation(r.system)).length;

    const search = async (...filter: string[]) => {
      const run = await runCli(['search', '--scope', SCOPE, '--strategy', 'temporal', ...filter, '--json'], env);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      return (JSON.parse(run.stdout) as SearchJson).results.map((r) => `${r.kind}: ${r.content}`);
    };
    const byTopic = await search('--topic', 'gardening');
    const byEntity = await search('--entity', 'Ines');
    const invented = await search('--topic', 'invented');
    const episodes = JSON.parse((await runCli(['episodes', '--scope', SCOPE, '--json'], env)).stdout) as {
      episodes: Array<{ role: string; content: string; metadata: Record<string, unknown> | null }>;
    };
    const memories = JSON.parse((await runCli(['memories', '--scope', SCOPE, '--json'], env)).stdout) as { memories: Array<{ content: string }> };
    const described = episodes.episodes.filter((e) => e.role === 'user').map((e) => ({ content: e.content.slice(0, 20), metadata: e.metadata }));
    process.stderr.write(
      `episode-metadata: consolidation calls ${consolidationCalls}, by topic ${JSON.stringify(byTopic)}, by entity ${JSON.stringify(byEntity)}, ` +
        `described ${JSON.stringify(described)}\n`,
    );

    expect(consolidationCalls).toBe(1);
    expect(byTopic).toEqual(['episode: I grow tomatoes on my balcony and they are finally red.']);
    expect(byEntity).toEqual(['episode: My sister Ines lives in Porto, she visits in May.']);
    expect(invented).toEqual([]);
    expect(described).toEqual([
      { content: 'I grow tomatoes on m', metadata: expect.objectContaining({ topics: ['gardening', 'balcony'], emotionalTone: 'proud', taskType: 'chat' }) },
      // The string where a list belonged and the number where a word belonged are left out; the rest is kept.
      { content: 'My sister Ines lives', metadata: expect.objectContaining({ entities: ['ines', 'porto'], taskType: 'chat' }) },
    ]);
    expect(described[1]!.metadata).not.toHaveProperty('emotionalTone');
    expect(memories.memories.map((m) => m.content)).toEqual(['The user has a sister named Ines who lives in Porto']);
  }, 240_000);
});
