/**
 * `npx nocturne <command> --json` (the package's `bin`), run as a person runs it from the
 * project: stdout is exactly the JSON document, with no npm banner and no `-s` needed. `--no`
 * keeps npx from looking for a package of that name anywhere else.
 */
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { cleanEnv, ROOT, runCommand } from '../support/run-process';

describe('npx nocturne', () => {
  it('prints clean --json output', async () => {
    const env = cleanEnv({ DATA_DIR: path.join(tempDir(), 'data') });
    const result = await runCommand('npx', ['--no', 'nocturne', 'scopes', '--json'], env, ROOT);
    process.stderr.write(
      `cli-bin: exit ${result.code}, stdout ${JSON.stringify(result.stdout.slice(0, 120))}, stderr ${JSON.stringify(result.stderr.slice(0, 160))}\n`,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ scopes: [] });
    expect(result.stdout).toBe('{"scopes":[]}\n');
  }, 120_000);
});
