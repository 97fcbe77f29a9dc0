/**
 * Issue 17, CLI for machines: the form the README documents for machine output,
 * `npm run -s cli -- <command> --json`, prints nothing but the JSON on stdout (plain `npm run`
 * prefixes npm's banner, `> nocturne@0.1.0 cli`), and progress is drawn only on a terminal:
 * `eval locomo` with stderr redirected writes no `\r` frames.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli, runCommand, type ProcessResult } from '../support/run-process';

const npm = (args: string[], env: NodeJS.ProcessEnv): Promise<ProcessResult> => runCommand('npm', args, env);

const turn = (id: string, speaker: string, text: string) => ({ speaker, dia_id: id, text });
const SAMPLE = {
  sample_id: 'conv-progress',
  conversation: {
    speaker_a: 'Caroline',
    speaker_b: 'Melanie',
    session_1_date_time: '1:56 pm on 8 May, 2023',
    session_1: Array.from({ length: 12 }, (_, i) =>
      turn(`D1:${i + 1}`, i % 2 ? 'Melanie' : 'Caroline', `Line ${i + 1} about the clarinet, the lake and the cat Oliver.`),
    ),
  },
  qa: [
    { question: 'What instrument does Melanie play?', answer: 'clarinet', evidence: ['D1:2'], category: 4 },
    { question: 'What is the cat called?', answer: 'Oliver', evidence: ['D1:4'], category: 1 },
  ],
};

describe('the CLI for machines (issue 17)', () => {
  let ollama: OllamaDouble;
  beforeAll(async () => {
    ollama = await startOllamaDouble();
  });
  afterAll(async () => {
    await ollama.stop();
  });

  it('`npm run -s cli -- scopes --json`, the documented form, prints only JSON on stdout', async () => {
    const env = cleanEnv({ DATA_DIR: path.join(tempDir(), 'data'), LOG_LEVEL: 'warn' });
    const silent = await npm(['run', '-s', 'cli', '--', 'scopes', '--json'], env);
    expect(silent.code).toBe(0);
    expect(() => JSON.parse(silent.stdout)).not.toThrow();
    // Why the README says -s: without it npm prints its banner on stdout first.
    const plain = await npm(['run', 'cli', '--', 'scopes', '--json'], env);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^\s*> nocturne@/);
    expect(() => JSON.parse(plain.stdout)).toThrow();
  }, 120_000);

  it('eval locomo with stderr redirected writes no progress frames, only each stage once', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'locomo.json');
    fs.writeFileSync(file, JSON.stringify([SAMPLE]));
    const env = cleanEnv({ DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url });
    const result = await runCli(['eval', 'locomo', '--data', file, '--k', '5'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/recall/);
    expect(result.stderr).not.toContain('\r');
    expect(result.stderr).toMatch(/embedding \d+\/\d+/);
  }, 120_000);
});
