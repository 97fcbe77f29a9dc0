/**
 * Export and import through the real CLI (child processes, real SQLite files): export to a file,
 * import into another installation, export again byte-identical; Markdown into a folder; a
 * corrupted file and a second import refused with exit status 2 and nothing written; a copy under
 * a new key, which does not keep the original's owner (its digests would reach the original
 * person's chat).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase } from '../../src/storage/database';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';
import { seedScope } from '../support/scope-fixture';

/** Each test runs several CLI processes, seconds each on a loaded machine. */
const CLI_TEST_TIMEOUT = 240_000;
/** The external id of the person who owns the exported scope. */
const ANA_OWNER = '7001';

/** Whether the scope's digests are delivered to someone, as the CLI reports it. */
async function digestDelivered(scope: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const shown = await runCli(['digest', '--scope', scope, '--schedule', '--json'], env);
  expect({ code: shown.code, stderr: shown.code === 0 ? '' : shown.stderr }).toEqual({ code: 0, stderr: '' });
  return (JSON.parse(shown.stdout) as { digestDelivered: boolean }).digestDelivered;
}

describe('export and import-scope (CLI, SQLite)', () => {
  const dir = tempDir();
  const file = path.join(dir, 'ana.json');
  const from = cleanEnv({ DATA_DIR: path.join(dir, 'from') });
  const to = cleanEnv({ DATA_DIR: path.join(dir, 'to') });

  beforeAll(async () => {
    const config = loadConfig({ env: { DATA_DIR: from.DATA_DIR! }, envFile: false });
    const db = await openDatabase({ database: config.database, logger: createSilentLogger() });
    await seedScope(db.prisma, 'ana');
    // Ana owns her scope: her digests are delivered to her (valid sleep settings, so the digest
    // schedule can be shown).
    const settings = { memoryCap: 500, sleepWindow: { startHour: 1, durationHours: 4 }, a: true };
    await db.prisma.scope.update({ where: { key: 'ana' }, data: { ownerId: ANA_OWNER, settings } });
    await db.close();
  });

  it(
    'round trip: export to a file, import elsewhere, export again gives the same bytes',
    async () => {
      const exported = await runCli(['export', '--scope', 'ana', '--out', file], from);
      expect({ code: exported.code, stderr: exported.code === 0 ? '' : exported.stderr }).toEqual({ code: 0, stderr: '' });
      expect(exported.stdout).toMatch(/^exported ana to .*ana\.json: 4 episodes, 4 memories \(with history\)/);
      const text = fs.readFileSync(file, 'utf8');

      const imported = await runCli(['import-scope', file, '--json'], to);
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout)).toMatchObject({ scope: 'ana', mode: 'exact', counts: { episodes: 4, memories: 4, profile: 1 } });

      const again = await runCli(['export', '--scope', 'ana'], to);
      expect(again.code).toBe(0);
      expect(again.stdout).toBe(text);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'refuses a corrupted file and a second import with exit status 2, writing nothing',
    async () => {
      const corrupted = path.join(dir, 'corrupted.json');
      const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { memories: Array<Record<string, unknown>>; scope: { key: string; id: string } };
      doc.memories[0]!.confidence = 'very';
      doc.scope.key = 'bob';
      doc.scope.id = '00000000-0000-7000-8000-0000000000bb';
      fs.writeFileSync(corrupted, JSON.stringify(doc));
      const bad = await runCli(['import-scope', corrupted], to);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('memories[0].confidence: Invalid input: expected number, received string');

      const twice = await runCli(['import-scope', file], to);
      expect(twice.code).toBe(2);
      expect(twice.stderr).toMatch(/already has data[\s\S]*--as NEW_KEY/);

      const scopes = await runCli(['scopes', '--json'], to);
      expect((JSON.parse(scopes.stdout) as { scopes: Array<{ key: string }> }).scopes.map((s) => s.key)).toEqual(['ana']);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'imports a copy under --as, and writes Markdown files into a folder',
    async () => {
      const copy = await runCli(['import-scope', file, '--as', 'ana-copy'], to);
      expect(copy.code).toBe(0);
      expect(copy.stdout).toMatch(/^imported ana-copy \(a copy with new ids\): 4 episodes/);
      // The exact import keeps Ana as the owner; the copy is bound to nobody, so its digests are not
      // delivered to Ana's chat.
      expect(await digestDelivered('ana', to)).toBe(true);
      expect(await digestDelivered('ana-copy', to)).toBe(false);
      const copied = await runCli(['export', '--scope', 'ana-copy'], to);
      expect((JSON.parse(copied.stdout) as { scope: { ownerId: string | null } }).scope.ownerId).toBeNull();

      const out = path.join(dir, 'markdown');
      const markdown = await runCli(['export', '--scope', 'ana-copy', '--format', 'markdown', '--out', out, '--json'], to);
      expect(markdown.code).toBe(0);
      expect(JSON.parse(markdown.stdout)).toMatchObject({ files: ['MEMORY.md', 'memory/2024-02-01.md', 'memory/2024-02-02.md', 'memory/2024-02-03.md'] });
      expect(fs.readFileSync(path.join(out, 'MEMORY.md'), 'utf8')).toContain('- Ana drinks green tea (confidence 0.90; from 2024-02-02)');
    },
    CLI_TEST_TIMEOUT,
  );
});
