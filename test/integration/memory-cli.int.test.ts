/**
 * The memory commands as a person runs them (`node --import tsx src/cli/index.ts ...` in a child process) on a
 * real SQLite file: memories, audit, soul, digest, forget (preview, then --yes), pause/resume,
 * and the usage errors. The state is made with the memory writer in this process first.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createMemory, decayMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { createSilentLogger } from '../../src/shared/logger';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { openDatabase, type Database } from '../../src/storage/database';
import { migratedDataDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

/**
 * Every test starts the CLI several times, one after the other (~2 s of CPU each for TypeScript
 * and the store): under a minute on a quiet machine; the default minute was passed when the cores
 * were shared with five other test runs.
 */
jest.setTimeout(600_000);

interface JsonMemory {
  id: string;
  content: string;
  state: string;
  confidence: number;
}

describe('memory commands (CLI, SQLite)', () => {
  let env: NodeJS.ProcessEnv;
  let db: Database;
  let scopeId: string;
  const ids: Record<string, string> = {};
  const now = new Date();
  const ago = (hours: number) => new Date(now.getTime() - hours * 3_600_000);

  const json = async <T>(args: string[]): Promise<T> => {
    const result = await runCli([...args, '--json'], env);
    expect({ args, code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ args, code: 0, stderr: '' });
    return JSON.parse(result.stdout) as T;
  };

  beforeAll(async () => {
    env = cleanEnv({ DATA_DIR: migratedDataDir() });
    const config = loadConfig({ env: { DATA_DIR: env.DATA_DIR! }, envFile: false });
    db = await openDatabase({ database: config.database, logger: createSilentLogger() });
    scopeId = (await db.prisma.scope.create({ data: { key: 'ana', channel: 'terminal', title: 'Ana', createdAt: ago(48) } })).id;
    await db.prisma.$transaction(async (tx) => {
      ids.coffee = (
        await createMemory(tx, { scopeId, category: 'preference', content: 'Ana drinks coffee', confidence: 0.8 }, { by: 'owner', now: ago(10) })
      ).id;
      ids.tea = (
        await supersedeMemory(tx, scopeId, ids.coffee, { content: 'Ana drinks tea', confidence: 0.9 }, { by: 'owner', now: ago(9), reason: 'switched' })
      ).current.id;
      ids.chess = (await createMemory(tx, { scopeId, category: 'interest', content: 'Ana plays chess', confidence: 0.3 }, { by: 'owner', now: ago(8) })).id;
      await decayMemory(tx, scopeId, ids.chess, 0.05, { now: ago(7), reason: 'not mentioned for months' });
      ids.flamingos = (
        await createMemory(tx, { scopeId, category: 'preference', content: 'Ana collects porcelain flamingos', confidence: 0.7 }, { by: 'owner', now: ago(6) })
      ).id;
      ids.nurse = (await createMemory(tx, { scopeId, category: 'fact', content: 'Ana works as a nurse', confidence: 0.85 }, { by: 'owner', now: ago(5) })).id;
    });
    await regenerateSoul(db.prisma, scopeId, { now: ago(4) });
  });
  afterAll(async () => db?.close());

  it('lists current memories, and with --all the faded and superseded ones, marked', async () => {
    const current = await json<{ scope: string; memories: JsonMemory[] }>(['memories', '--scope', 'ana']);
    expect(current.memories.map((m) => m.content)).toEqual(['Ana drinks tea', 'Ana works as a nurse', 'Ana collects porcelain flamingos']);
    const all = await json<{ memories: JsonMemory[] }>(['memories', '--scope', 'ana', '--all']);
    expect(all.memories.map((m) => [m.content, m.state])).toEqual([
      ['Ana drinks tea', 'active'],
      ['Ana works as a nurse', 'active'],
      ['Ana collects porcelain flamingos', 'active'],
      ['Ana plays chess', 'faded'],
      ['Ana drinks coffee', 'superseded'],
    ]);
    const byId = await json<{ scope: string; memories: JsonMemory[] }>(['memories', '--scope', scopeId]);
    expect(byId).toEqual(current); // --scope takes the scope's id as well as its key
    const text = await runCli(['memories', '--scope', 'ana', '--all'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^${ids.tea}  0\\.90  preference   Ana drinks tea$`, 'm'));
    expect(text.stdout).toMatch(/\[superseded\] Ana drinks coffee/);
    expect(text.stdout).toMatch(/\[faded\] Ana plays chess/);
  });

  it('shows the audit trail, newest first, limited', async () => {
    const { events } = await json<{ events: Array<{ action: string; subjectId: string; reason: string | null }> }>(['audit', '--scope', 'ana', '--limit', '3']);
    expect(events.map((e) => e.action)).toEqual(['soul', 'create', 'create']);
    expect(events[1]!.subjectId).toBe(ids.nurse);
    const text = await runCli(['audit', '--scope', 'ana'], env);
    expect(text.stdout).toMatch(/deactivate .*Ana plays chess \(0\.05\) {2}— not mentioned for months/);
    expect(text.stdout).toMatch(/update .*Ana drinks coffee.*— switched/);
  });

  it('prints the soul as Markdown', async () => {
    const result = await runCli(['soul', '--scope', 'ana'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^# Soul of Ana\n/);
    expect(result.stdout).toContain('## Preferences\n\n- Ana drinks tea (0.90)\n- Ana collects porcelain flamingos (0.70)\n');
    expect(result.stdout).not.toMatch(/coffee|chess/);
    const data = await json<{ version: number; data: { facts: Array<{ content: string }> } }>(['soul', '--scope', 'ana']);
    expect(data.version).toBe(1);
    expect(data.data.facts.map((f) => f.content)).toEqual(['Ana works as a nurse']);
  });

  it('builds the digest since the last one and prints it', async () => {
    const result = await runCli(['digest', '--scope', 'ana'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^# What I learned/);
    expect(result.stdout).toMatch(/^\d+\. Ana collects porcelain flamingos$/m);
    expect(result.stdout).toMatch(/^\d+\. Ana drinks tea \(was: Ana drinks coffee\)$/m);
    const digests = await db.prisma.digest.findMany({ where: { scopeId } });
    expect(digests).toHaveLength(1);
    expect(digests[0]!.status).toBe('pending');
    // Nothing happened since: the next digest is empty and says so.
    const again = await json<{ status: string; items: unknown[] }>(['digest', '--scope', 'ana']);
    expect(again).toMatchObject({ status: 'empty', items: [] });
    expect((await runCli(['digest', '--scope', 'ana'], env)).stdout).toMatch(/^nothing new in ana since /);
  });

  it('shows what would be forgotten, and forgets it with --yes', async () => {
    const preview = await runCli(['forget', '--scope', 'ana', '--words', 'porcelain flamingos'], env);
    expect(preview.code).toBe(0);
    expect(preview.stdout).toContain(`would forget 1 memory in ana:\n  ${ids.flamingos}  preference   Ana collects porcelain flamingos\nrun again with --yes`);
    expect(await db.prisma.memory.count({ where: { id: ids.flamingos } })).toBe(1);

    const done = await json<{ applied: boolean; removedIds: string[]; soulVersion: number }>([
      'forget',
      '--scope',
      'ana',
      '--words',
      'porcelain flamingos',
      '--yes',
    ]);
    expect(done).toMatchObject({ applied: true, removedIds: [ids.flamingos], soulVersion: 2 });
    expect(await db.prisma.memory.count({ where: { id: ids.flamingos } })).toBe(0);
    expect((await runCli(['soul', '--scope', 'ana'], env)).stdout).not.toContain('flamingos');
    expect(JSON.stringify(await db.prisma.digest.findMany({ where: { scopeId } }))).not.toContain('flamingos');
    expect(JSON.stringify(await db.prisma.auditEvent.findMany({ where: { scopeId } }))).not.toContain('flamingos');

    const byId = await runCli(['forget', '--scope', 'ana', '--memory', ids.coffee], env);
    expect(byId.stdout).toContain('would forget 2 memories in ana:');
    expect(byId.stdout).toContain('[superseded] Ana drinks coffee');
    const applied = await runCli(['forget', '--scope', 'ana', '--memory', ids.coffee, '--yes'], env);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/^forgot 2 memories in ana:/);
    const left = await json<{ memories: JsonMemory[] }>(['memories', '--scope', 'ana', '--all']);
    expect(left.memories.map((m) => m.content)).toEqual(['Ana works as a nurse', 'Ana plays chess']);

    const nothing = await runCli(['forget', '--scope', 'ana', '--words', 'unicorns'], env);
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toMatch(/nothing in ana holds all of: unicorns/);
  });

  it('pauses and resumes consolidation, audited', async () => {
    expect((await runCli(['pause', '--scope', 'ana'], env)).stdout).toBe('paused consolidation of ana\n');
    expect((await db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).paused).toBe(true);
    expect(await json(['pause', '--scope', 'ana'])).toEqual({ scope: 'ana', paused: true, changed: false });
    expect((await runCli(['resume', '--scope', 'ana'], env)).stdout).toBe('resumed consolidation of ana\n');
    expect((await db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).paused).toBe(false);
    const events = await db.prisma.auditEvent.findMany({ where: { scopeId, subjectType: 'scope' }, orderBy: { createdAt: 'asc' } });
    expect(events.map((e) => [e.action, e.subjectId, e.after])).toEqual([
      ['pause', scopeId, { paused: true }],
      ['resume', scopeId, { paused: false }],
    ]);
  });

  it('refuses an unknown scope, a missing --scope and a bad forget command line with exit status 2', async () => {
    const commands: string[][] = [['memories'], ['audit'], ['soul'], ['digest'], ['forget', '--words', 'x'], ['pause'], ['resume']];
    const results = await Promise.all(commands.map((c) => runCli([...c, '--scope', 'nobody', '--json'], env)));
    for (const [i, result] of results.entries()) {
      expect({ command: commands[i]![0], code: result.code, error: (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error }).toEqual(
        {
          command: commands[i]![0],
          code: 2,
          error: expect.objectContaining({ code: 'not_found', message: 'No scope "nobody" (see `npm run cli -- scopes`)' }),
        },
      );
    }
    const noScope = await runCli(['memories'], env);
    expect(noScope.code).toBe(2);
    expect(noScope.stderr).toMatch(/memories needs --scope/i);
    const neither = await runCli(['forget', '--scope', 'ana'], env);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/exactly one of --memory ID or --words/i);
    const both = await runCli(['forget', '--scope', 'ana', '--memory', ids.nurse, '--words', 'nurse'], env);
    expect(both.code).toBe(2);
    const badLimit = await runCli(['audit', '--scope', 'ana', '--limit', 'lots'], env);
    expect(badLimit.code).toBe(2);
    const unknownMemory = await runCli(['forget', '--scope', 'ana', '--memory', '00000000-0000-7000-8000-000000000000', '--yes'], env);
    expect(unknownMemory.code).toBe(2);
    expect(unknownMemory.stderr).toMatch(/Memory 00000000-0000-7000-8000-000000000000 is not among the memories kept here/);
    // Thirteen child processes, each starting the CLI (TypeScript, the store): the time of thirteen starts on a busy machine.
  });
});
