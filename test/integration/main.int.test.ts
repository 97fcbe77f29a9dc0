/**
 * `npm start` (src/main.ts) as a process: it comes up on the embedded defaults, creates its
 * database under DATA_DIR, and stops cleanly on SIGTERM and SIGINT.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { cleanEnv, runTs, startTs } from '../support/run-process';

describe('npm start', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('comes up on the embedded defaults and stops cleanly on %s', async (signal) => {
    const dataDir = path.join(tempDir(), 'data');
    const service = await startTs('src/main.ts', cleanEnv({ DATA_DIR: dataDir, ANTHROPIC_API_KEY: 'sk-ant-test-key-never-logged-1234' }), /Nocturne is ready/);
    expect(fs.existsSync(path.join(dataDir, 'nocturne.db'))).toBe(true);
    service.child.kill(signal);
    expect(await service.exited).toBe(0);
    const output = service.output();
    expect(output).toMatch(/stopped cleanly/);
    expect(output).not.toMatch(/never-logged/);
    const lines = output.split('\n').filter((line) => line.startsWith('{'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('exits with status 2 and lists every problem when the configuration is invalid', async () => {
    const result = await runTs('src/main.ts', [], cleanEnv({ DB_PROVIDER: 'postgres', EMBEDDER: 'word2vec' }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Invalid configuration/);
    expect(result.stderr).toMatch(/EMBEDDER: .*local.*ollama/);
    expect(result.stderr).toMatch(/DATABASE_URL: must be a postgresql:/);
  });
});
