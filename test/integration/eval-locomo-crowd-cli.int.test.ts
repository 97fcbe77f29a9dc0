/**
 * `npm run cli -- eval locomo --crowd N` as a person runs it, on two tiny LoCoMo-format
 * conversations with the Ollama double's embeddings: the conversations' questions are asked among
 * thousands of crowd episodes that copy their own turns (the same words, near-identical vectors)
 * in other scopes, and the recall is the same as without the crowd, with no result from outside
 * the asked conversation; on SQLite and on a PostgreSQL server the command starts itself.
 * Bad values are refused with exit status 2 before anything is built.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { findPostgresBinaries } from '../../src/storage/local-postgres';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { locomoConversation as conversation } from '../support/locomo-sample';
import { cleanEnv, runCli, type ProcessResult } from '../support/run-process';

const SAMPLES = [conversation('conv-a', 'Caroline', 'Melanie', 'pottery', 'Oliver', 'Lisbon'), conversation('conv-b', 'Jon', 'Gina', 'salsa', 'Rex', 'Denver')];
const CROWD = 3_000;
const CROWD_SCOPES = 30;
const K = '1,2,3';

interface Recall {
  [k: string]: number;
}
interface Report {
  questions: number;
  recall: Recall;
  database: string;
  queryMs: { p50: number; p95: number };
  crowd?: {
    episodes: number;
    scopes: number;
    largestScope: number;
    loadSeconds: number;
    episodesPerSecond: number;
    foreignResults: number;
    emptyStore: { recall: Recall; queryMs: { p50: number; p95: number } };
  };
}

const lastJson = (result: ProcessResult): Report => JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Report;

describe('CLI eval locomo --crowd', () => {
  let ollama: OllamaDouble;
  let dir: string;
  let data: string;
  let env: NodeJS.ProcessEnv;
  let alone: ProcessResult;
  let crowded: ProcessResult;

  beforeAll(async () => {
    ollama = await startOllamaDouble();
    dir = tempDir();
    data = path.join(dir, 'two.json');
    fs.writeFileSync(data, JSON.stringify(SAMPLES));
    env = cleanEnv({ DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url });
    alone = await runCli(['eval', 'locomo', '--data', data, '--k', K, '--json'], env);
    crowded = await runCli(['eval', 'locomo', '--data', data, '--k', K, '--crowd', String(CROWD), '--crowd-scopes', String(CROWD_SCOPES), '--json'], env);
  }, 240_000);

  afterAll(async () => {
    await ollama?.stop();
  });

  it('reports the crowd it loaded and how long it took', () => {
    expect(crowded.stderr).not.toMatch(/error/i);
    expect(crowded.code).toBe(0);
    const report = lastJson(crowded);
    expect(report.database).toBe('sqlite');
    const crowd = report.crowd!;
    expect(crowd.episodes).toBe(CROWD);
    expect(crowd.scopes).toBe(CROWD_SCOPES);
    expect(crowd.largestScope).toBeGreaterThan(CROWD / CROWD_SCOPES);
    expect(crowd.largestScope).toBeLessThan(CROWD);
    expect(crowd.loadSeconds).toBeGreaterThan(0);
    expect(crowd.episodesPerSecond).toBeGreaterThan(0);
    expect(lastJson(alone).crowd).toBeUndefined();
  });

  it('scores the conversations over their own scopes only: the crowd changes no figure', () => {
    expect(alone.code).toBe(0);
    const without = lastJson(alone);
    const report = lastJson(crowded);
    expect(report.questions).toBe(8);
    // The crowd copies these very turns into other scopes: a search that looked outside the asked
    // scope would return them (and push the real turns down at k = 1).
    expect(report.crowd!.foreignResults).toBe(0);
    expect(report.recall).toEqual(without.recall);
    expect(report.crowd!.emptyStore.recall).toEqual(without.recall);
    expect(Object.values(report.recall).every((v) => v > 0)).toBe(true);
  });

  it('says the same in words', async () => {
    const text = await runCli(['eval', 'locomo', '--data', data, '--k', K, '--crowd', '500', '--crowd-scopes', '5'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^crowd 500 episodes in 5 other scopes \(largest \d+\), loaded in [\d.]+ s \([\d,]+ episodes\/s\); results from outside the asked conversation: 0$/m,
    );
    expect(text.stdout).toMatch(
      /^before the crowd \(the conversations alone\): recall @1 [\d.]+ {2}@2 [\d.]+ {2}@3 [\d.]+, query p50 [\d.]+ ms, p95 [\d.]+ ms$/m,
    );
  }, 120_000);

  const postgres = findPostgresBinaries().dir ? it : it.skip;
  postgres(
    'runs the same on a PostgreSQL server it starts and stops itself',
    async () => {
      const result = await runCli(
        ['eval', 'locomo', '--data', data, '--k', K, '--crowd', '1000', '--crowd-scopes', '10', '--database', 'postgres', '--json'],
        env,
      );
      expect(result.stderr).not.toMatch(/error/i);
      expect(result.code).toBe(0);
      const report = lastJson(result);
      expect(report.database).toBe('postgres');
      expect(report.crowd).toMatchObject({ episodes: 1000, scopes: 10, foreignResults: 0 });
      expect(report.recall).toEqual(lastJson(alone).recall);
    },
    180_000,
  );

  it.each([
    [['--crowd=-5'], /--crowd must be a whole number of episodes from 1/],
    [['--crowd', 'many'], /--crowd must be a whole number of episodes from 1/],
    [['--crowd', '0'], /--crowd must be a whole number of episodes from 1/],
    [['--crowd', '10', '--crowd-scopes', '20'], /--crowd-scopes \(20\) cannot exceed --crowd \(10\)/],
    [['--crowd', '10', '--crowd-scopes', '0'], /--crowd-scopes must be a whole number of at least 1/],
    [['--crowd', '10', '--crowd-scopes', 'x'], /--crowd-scopes must be a whole number of at least 1/],
    [['--crowd-scopes', '3'], /--crowd-scopes needs --crowd N/],
    [['--database', 'mysql'], /--database must be sqlite or postgres/],
  ])(
    'refuses %j with exit status 2',
    async (args, message) => {
      const result = await runCli(['eval', 'locomo', '--data', data, ...args], env);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
    },
    60_000,
  );
});
