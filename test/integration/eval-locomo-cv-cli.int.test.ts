/**
 * `npm run cli -- eval locomo --cv` as a person runs it, on three tiny LoCoMo-format
 * conversations with the Ollama double's embeddings: the cross-validated figures come beside the
 * in-sample ones, one fold per conversation, every question measured once held out, and the
 * cached-candidate replica of the defaults reproduces the search's own in-sample figures exactly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { locomoConversation as conversation } from '../support/locomo-sample';
import { cleanEnv, runCli, type ProcessResult } from '../support/run-process';

const SAMPLES = [
  conversation('conv-a', 'Caroline', 'Melanie', 'pottery', 'Oliver', 'Lisbon'),
  conversation('conv-b', 'Jon', 'Gina', 'salsa', 'Rex', 'Denver'),
  conversation('conv-c', 'Nate', 'Joanna', 'violin', 'Bailey', 'Tokyo'),
];

interface Recall {
  [k: string]: number;
}
interface CvJson {
  questions: number;
  recall: Recall;
  byCategory: Record<string, { questions: number; recall: Recall }>;
  replica: Recall;
  folds: Array<{ heldOut: string; questions: number; weights: Record<string, number>; recall: Recall }>;
  tunedOnAll: { weights: Record<string, number>; recall: Recall };
}
interface ReportJson {
  questions: number;
  recall: Recall;
  byCategory: Record<string, unknown>;
  queryMs: { p50: number; p95: number };
  cv?: CvJson;
}

describe('CLI eval locomo --cv', () => {
  let ollama: OllamaDouble;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let result: ProcessResult;
  let text: ProcessResult;

  beforeAll(async () => {
    ollama = await startOllamaDouble();
    dir = tempDir();
    fs.writeFileSync(path.join(dir, 'three.json'), JSON.stringify(SAMPLES));
    fs.writeFileSync(path.join(dir, 'one.json'), JSON.stringify(SAMPLES.slice(0, 1)));
    env = cleanEnv({ DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url });
    result = await runCli(['eval', 'locomo', '--data', path.join(dir, 'three.json'), '--cv', '--json'], env);
    text = await runCli(['eval', 'locomo', '--data', path.join(dir, 'three.json'), '--cv', '--k', '5,10'], env);
  }, 240_000);

  afterAll(async () => {
    await ollama?.stop();
  });

  it('prints the cross-validated recall beside the in-sample recall, one fold per conversation', () => {
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as ReportJson;
    expect(report.questions).toBe(12);
    expect(Object.keys(report.recall)).toEqual(['@5', '@10', '@25', '@50']);
    const cv = report.cv!;
    expect(cv).toBeDefined();
    expect(cv.folds.map((f) => f.heldOut)).toEqual(['conv-a', 'conv-b', 'conv-c']);
    // Every question is measured exactly once, in its own conversation's fold.
    expect(cv.folds.map((f) => f.questions)).toEqual([4, 4, 4]);
    expect(cv.questions).toBe(12);
    expect(Object.keys(cv.byCategory).sort()).toEqual(['1', '2', '3', '4']);
    for (const c of Object.values(cv.byCategory)) expect(c.questions).toBe(3);
    // The overall figure is the mean of the folds' (equal-sized) figures.
    for (const k of ['@5', '@10']) {
      const mean = cv.folds.reduce((s, f) => s + f.recall[k]!, 0) / cv.folds.length;
      expect(Math.abs(cv.recall[k]! - mean)).toBeLessThanOrEqual(0.1);
    }
    // Scoring the cached candidates with the defaults gives exactly what the search gave.
    expect(cv.replica).toEqual(report.recall);
    // Each fold's weights are a point of the grid (every tuned weight named).
    for (const f of cv.folds) expect(Object.keys(f.weights).sort()).toEqual(['context', 'passage', 'semantic', 'session', 'speaker', 'substance', 'time']);
    for (const v of Object.values(report.recall)) expect(v).toBeGreaterThan(0);
  });

  it('says the same in words, with the chosen weights of each fold', () => {
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^recall @5 [\d.]+ {2}@10 [\d.]+$/m);
    expect(text.stdout).toMatch(/^cross-validated \(leave one conversation out; weights tuned on the others\): recall @5 [\d.]+ {2}@10 [\d.]+$/m);
    expect(text.stdout).toMatch(/^ {2}held out conv-b \(4 q\): @5 [\d.]+ {2}@10 [\d.]+; tuned: semantic [\d.]+, context/m);
    expect(text.stdout).toMatch(/tuned on all conversations \(in-sample\)/);
  });

  it('refuses --cv with one conversation: there is nothing to tune on', async () => {
    const one = await runCli(['eval', 'locomo', '--data', path.join(dir, 'one.json'), '--cv'], env);
    expect(one.code).toBe(2);
    expect(one.stderr).toMatch(/--cv needs at least 2 conversations/);
    expect(one.stdout).toBe('');
  }, 120_000);
});
