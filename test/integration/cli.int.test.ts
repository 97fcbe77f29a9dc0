/**
 * The CLI as a person runs it (`npm run cli -- ...` is `node --import tsx src/cli/index.ts ...`), on a real
 * SQLite file and a real PostgreSQL database: the import round trip of the Foundation issue.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { createPostgresDatabase, migratedDataDir, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { cleanEnv, runCli, runTs } from '../support/run-process';

const BIG = 'é'.repeat(1_000_000); // 2 MB of UTF-8 on one line

/** A JSONL file with emoji, right-to-left text, a 2 MB line, a blank line and malformed lines. */
function writeSample(dir: string): string {
  const lines = [
    JSON.stringify({ content: 'I love hiking 🏔️ with my dog 🐕', externalId: 'm1', author: 'alice', timestamp: '2024-05-08T13:56:00Z', conversationId: 'c1' }),
    JSON.stringify({ content: 'שלום! مرحبا بك', externalId: 'm2', role: 'assistant', timestamp: '2024-05-08T13:57:00Z', conversationId: 'c1' }),
    '',
    JSON.stringify({ content: BIG, externalId: 'm3', timestamp: '2024-05-08T13:58:00Z', metadata: { topics: ['Long'] } }),
    '{"content": "unterminated',
    JSON.stringify({ content: ' \u0000 ' }),
    JSON.stringify({ content: 'when?', timestamp: 'last tuesday' }),
    JSON.stringify(['not', 'an', 'object']),
    JSON.stringify({ content: 'other scope line', externalId: 'o1', scope: 'bob', timestamp: '2024-05-09T10:00:00Z' }),
  ];
  const file = path.join(dir, 'sample.jsonl');
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

type Env = NodeJS.ProcessEnv;

function roundTrip(name: string, makeEnv: () => Promise<Env>) {
  describe(`CLI import/episodes round trip on ${name}`, () => {
    let env: Env;
    let file: string;
    beforeAll(async () => {
      const dir = tempDir();
      env = await makeEnv();
      env.DATA_DIR = path.join(dir, 'data');
      file = writeSample(dir);
    });

    it('imports valid lines, reports invalid ones by line number, and counts correctly', async () => {
      const result = await runCli(['import', '--scope', 'alice', file, '--json'], env);
      expect(result.code).toBe(1); // some lines were invalid
      const report = JSON.parse(result.stdout) as {
        imported: number;
        skipped: number;
        invalid: number;
        blankLines: number;
        invalidLines: Array<{ line: number; error: string }>;
      };
      expect(report).toMatchObject({ imported: 4, skipped: 0, invalid: 4, blankLines: 1 });
      expect(report.invalidLines.map((l) => l.line)).toEqual([5, 6, 7, 8]);
      expect(report.invalidLines[0]!.error).toMatch(/not valid JSON/);
      expect(report.invalidLines[1]!.error).toMatch(/empty/);
      expect(report.invalidLines[2]!.error).toMatch(/ISO 8601/);
      expect(report.invalidLines[3]!.error).toMatch(/JSON object/);
    });

    it('gives back exactly what was imported, oldest first', async () => {
      const result = await runCli(['episodes', '--scope', 'alice', '--json'], env);
      expect(result.code).toBe(0);
      const { episodes } = JSON.parse(result.stdout) as { episodes: Array<Record<string, unknown>> };
      expect(episodes.map((e) => e.externalId)).toEqual(['m1', 'm2', 'm3']);
      expect(episodes[0]).toMatchObject({
        content: 'I love hiking 🏔️ with my dog 🐕',
        author: 'alice',
        role: 'user',
        channel: 'import',
        timestamp: '2024-05-08T13:56:00.000Z',
        conversationId: 'c1',
      });
      expect(episodes[1]).toMatchObject({ content: 'שלום! مرحبا بك', role: 'agent' });
      expect(episodes[2]!.content).toBe(BIG);
      expect(episodes[2]!.metadata).toEqual({ topics: ['Long'] });
      const bob = JSON.parse((await runCli(['episodes', '--scope', 'bob', '--json'], env)).stdout) as { episodes: Array<{ content: string }> };
      expect(bob.episodes.map((e) => e.content)).toEqual(['other scope line']);
    });

    it('reports everything as skipped on a second import', async () => {
      const result = await runCli(['import', '--scope', 'alice', file, '--json'], env);
      expect(JSON.parse(result.stdout)).toMatchObject({ imported: 0, skipped: 4, invalid: 4 });
      const listed = JSON.parse((await runCli(['episodes', '--scope', 'alice', '--json'], env)).stdout) as { episodes: unknown[] };
      expect(listed.episodes).toHaveLength(3);
    });

    it('filters with --since and --limit, and lists scopes with counts', async () => {
      const since = JSON.parse((await runCli(['episodes', '--scope', 'alice', '--since', '2024-05-08T13:57:00Z', '--limit', '1', '--json'], env)).stdout) as {
        episodes: Array<{ externalId: string }>;
      };
      expect(since.episodes.map((e) => e.externalId)).toEqual(['m2']);
      const scopes = JSON.parse((await runCli(['scopes', '--json'], env)).stdout) as { scopes: Array<{ key: string; episodes: number }> };
      expect(scopes.scopes.map((s) => [s.key, s.episodes])).toEqual([
        ['alice', 3],
        ['bob', 1],
      ]);
    });

    it('passes doctor', async () => {
      const result = await runCli(['doctor', '--json'], env);
      const report = JSON.parse(result.stdout) as { ok: boolean; checks: Array<{ name: string; status: string }> };
      expect(report.ok).toBe(true);
      expect(report.checks.find((c) => c.name === 'full-text index')?.status).toBe('ok');
      expect(result.code).toBe(0);
    });
  });
}

roundTrip('SQLite', async () => cleanEnv({}));

if (postgresAvailable()) {
  roundTrip('PostgreSQL', async () => cleanEnv({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
} else {
  it.skip(`CLI round trip on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}

describe('CLI errors', () => {
  it('says what is wrong with the command line, with exit status 2', async () => {
    const env = cleanEnv({ DATA_DIR: migratedDataDir() });
    const unknown = await runCli(['frobnicate'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown command "frobnicate"/);
    const noScope = await runCli(['episodes'], env);
    expect(noScope.code).toBe(2);
    expect(noScope.stderr).toMatch(/needs --scope/);
    const missing = await runCli(['episodes', '--scope', 'nobody', '--json'], env);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { code: 'not_found' } });
    const noFile = await runCli(['import', '--scope', 'x', '/nonexistent.jsonl'], env);
    expect(noFile.stderr).toMatch(/Cannot read \/nonexistent.jsonl/);
  });

  it('lists every configuration problem and exits 2, without printing secrets', async () => {
    const result = await runCli(['scopes'], cleanEnv({ DB_PROVIDER: 'oracle', LOG_LEVEL: 'chatty', ADMIN_TOKEN: 'tiny' }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/DB_PROVIDER/);
    expect(result.stderr).toMatch(/LOG_LEVEL/);
    expect(result.stderr).toMatch(/ADMIN_TOKEN: must be at least 16 characters/);
    expect(result.stderr).not.toMatch(/tiny/);
  });

  it('explains an unreachable PostgreSQL server without showing the password', async () => {
    const result = await runCli(['scopes'], cleanEnv({ DB_PROVIDER: 'postgres', DATABASE_URL: 'postgresql://nocturne:s3cret-pass@127.0.0.1:1/nocturne' }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/PostgreSQL 127\.0\.0\.1:1\/nocturne/);
    expect(result.stderr).toMatch(/DATABASE_URL/);
    expect(result.stderr + result.stdout).not.toMatch(/s3cret-pass/);
  });
});

describe('CLI chat', () => {
  it('is the terminal channel on stdin/stdout: commands answered in order, /quit exits 0', async () => {
    const env = cleanEnv({ DATA_DIR: migratedDataDir() });
    const result = await runTs(
      'src/cli/index.ts',
      ['chat', '--scope', 'terminal:cli', '--name', 'Cli'],
      env,
      undefined,
      '/help\n/memories\n/pause\n/frobnicate\n/quit\nnot read\n',
    );
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^Hello, Cli! I am Nocturne; what you tell me here is remembered in terminal:cli\./);
    const order = [
      '/memories [--all] [category | next | prev | N] — ',
      'I have no memories of our conversations yet.',
      'Paused: ',
      'I do not know /frobnicate.',
    ].map((s) => out.indexOf(s));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const scopes = JSON.parse((await runCli(['scopes', '--json'], env)).stdout) as { scopes: Array<{ key: string; channel: string; episodes: number }> };
    expect(scopes.scopes).toEqual([expect.objectContaining({ key: 'terminal:cli', channel: 'terminal', episodes: 0 })]);
  });

  it('has no --json form', async () => {
    const result = await runTs('src/cli/index.ts', ['chat', '--json'], cleanEnv({ DATA_DIR: migratedDataDir() }), undefined, '');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no --json output/);
  });
});

describe('CLI output of stored text', () => {
  // A key pasted into a chat stays in its episode; every command shows it redacted.
  const KEY = `sk-ant-api03-${'Zq7'.repeat(16)}`;

  it('never shows a pasted secret in full: episodes and search, JSON and text', async () => {
    const dir = tempDir();
    const env = cleanEnv({ DATA_DIR: path.join(dir, 'data') });
    const file = path.join(dir, 'secret.jsonl');
    fs.writeFileSync(file, `${JSON.stringify({ content: `my staging key is ${KEY} keep it safe`, externalId: 's1', timestamp: '2024-05-08T13:56:00Z' })}\n`);
    expect((await runCli(['import', '--scope', 'carol', file], env)).code).toBe(0);
    const search = ['search', '--scope', 'carol', '--query', 'staging key', '--strategy', 'keyword'];
    for (const args of [['episodes', '--scope', 'carol', '--json'], ['episodes', '--scope', 'carol'], [...search, '--json'], search]) {
      const result = await runCli(args, env);
      expect({ args, code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(result.stdout).toContain('my staging key is [REDACTED]');
      expect(result.stdout).not.toContain('Zq7Zq7');
    }
  }, 240_000);
});
