/**
 * Correcting and pinning memories through the terminal and the CLI, on real SQLite, the real
 * agent answering through the Anthropic SDK against the loopback double:
 * - `npm run cli -- chat` (a child process): `/fix N new text` makes a new version (the old one
 *   kept as history, `/why` shows it), `/pin N` pins; bad input (no text, an unknown number, a
 *   secret) changes nothing;
 * - a pinned memory survives the real decay job (the scheduler on a simulated clock) that fades
 *   or lowers an equal unpinned one; capped mode (a conversation ended with `/end` in the chat)
 *   never evicts it, whether the model picks the first memory shown or its answer fails (FIFO);
 * - `memories fix|pin|unpin` (CLI) are audited as the operator's; `export` and `import-scope`
 *   keep `pinned`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli, runTs } from '../support/run-process';

const ANSWER = 'Lovely, noted.';
const DAY_MS = 86_400_000;

describe('correcting and pinning memories: terminal chat and CLI', () => {
  const root = tempDir('nocturne-memory-corrections-');
  const dataDir = path.join(root, 'data');
  let double: AnthropicDouble;
  let env: NodeJS.ProcessEnv;
  /** What the capped-mode model decides next: delete the first memory shown, or an unusable answer (FIFO). */
  let decision: 'first' | 'broken' = 'first';

  const chat = (key: string, ...lines: string[]) =>
    runTs('src/cli/index.ts', ['chat', '--scope', key, '--name', 'Ann'], env, undefined, `${lines.join('\n')}\n/quit\n`);

  async function cli(...args: string[]): Promise<string> {
    const run = await runCli(args, env);
    expect({ args, code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ args, code: 0, stderr: '' });
    return run.stdout;
  }

  /** Opens the store in this process (the chat and the CLI are not running), works on it, closes it. */
  async function withCore<T>(work: (core: Core) => Promise<T>): Promise<T> {
    const config = loadConfig({ env: { ...env, DATA_DIR: dataDir } as Record<string, string>, envFile: false });
    const core = await createCore(config, memoryLogger().logger);
    try {
      return await work(core);
    } finally {
      await core.close();
    }
  }

  /** Writes `memories` into the scope `key` as its owner (no evidence needed), each `at` its own time. */
  async function seed(key: string, memories: ReadonlyArray<{ content: string; category?: string; confidence: number; at?: Date }>): Promise<string[]> {
    return withCore(async (core) => {
      const scope = await core.directory.ensure({ key, channel: 'terminal', kind: 'user' });
      const ids: string[] = [];
      for (const m of memories) {
        const memory = await core.db.prisma.$transaction((tx) =>
          createMemory(
            tx,
            { scopeId: scope.id, category: m.category ?? 'fact', content: m.content, confidence: m.confidence },
            { by: 'owner', now: m.at ?? new Date() },
          ),
        );
        ids.push(memory.id);
      }
      return ids;
    });
  }

  const memoryRow = (id: string) => withCore((core) => core.db.prisma.memory.findUniqueOrThrow({ where: { id } }));

  beforeAll(async () => {
    double = await startAnthropicDouble({
      responder: (seen) => {
        const system = seen.system ?? '';
        if (system.includes('memory sub-agent')) return { kind: 'text', text: JSON.stringify({ content: 'Ann likes figs in autumn' }) };
        if (system.includes('memory management assistant')) {
          return decision === 'first'
            ? { kind: 'text', text: JSON.stringify({ action: 'delete', targetMemoryId: 1, reason: 'the first one listed' }) }
            : { kind: 'text', text: 'no idea' };
        }
        return { kind: 'text', text: ANSWER };
      },
    });
    env = cleanEnv({ DATA_DIR: dataDir, ANTHROPIC_API_KEY: 'sk-ant-test-memory-corrections', ANTHROPIC_BASE_URL: double.url, SLEEP_ENABLED: 'false' });
  }, 60_000);
  afterAll(async () => {
    await double?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('/fix and /pin in the terminal chat: a new version with the old in history, pinned; bad input changes nothing', async () => {
    const key = 'terminal:ann';
    const [cello, jordi] = await seed(key, [
      { content: 'Ann plays the cello', confidence: 0.95 },
      { content: 'Jordi is an acquaintance of Ann', confidence: 0.9 },
    ]);
    const run = await chat(
      key,
      '/memories',
      '/fix 2',
      '/fix 99 Jordi is my brother',
      '/fix 2 Jordi has the key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop0123',
      '/fix 2 Jordi is my husband',
      '/pin 1',
      '/memories',
    );
    expect(run.code).toBe(0);
    const out = run.stdout;
    const expected = [
      '2. Jordi is an acquaintance of Ann',
      'What should item 2 say instead? Write it after the number: /fix 2 Jordi is my husband. Nothing changed.',
      'There is no number 99 in the last /memories list you saw (it showed 1–2). Nothing changed.',
      'I never keep secrets; nothing changed.',
      'Corrected: Jordi is my husband (was: Jordi is an acquaintance of Ann)',
      'Pinned: Ann plays the cello. It will not fade; /unpin 1 lets it.',
      '📌 Ann plays the cello',
    ];
    const at = expected.map((s) => out.indexOf(s));
    // Every answer, in the order asked.
    expect({ at, out }).toEqual({ at: [...at].sort((a, b) => a - b), out });
    expect({ missing: expected.filter((_, i) => at[i]! < 0), out }).toEqual({ missing: [], out });
    expect(out).not.toContain('ABCDEFGHIJKLMNOP');

    const rows = await withCore((core) => core.db.prisma.memory.findMany({ where: { scope: { key } }, orderBy: { createdAt: 'asc' } }));
    // One new version (the refused attempts wrote nothing); the old one superseded by it.
    expect(rows).toHaveLength(3);
    const old = rows.find((r) => r.id === jordi)!;
    const current = rows.find((r) => r.content === 'Jordi is my husband')!;
    expect(old).toMatchObject({ active: false, supersededById: current.id });
    expect(current).toMatchObject({ active: true, category: 'fact', sourceType: 'stated', confidence: 1, pinned: false });
    expect(rows.find((r) => r.id === cello)!.pinned).toBe(true);
    const audit = await withCore((core) => core.db.prisma.auditEvent.findMany({ where: { scope: { key }, action: { in: ['correct', 'pin'] } } }));
    expect(audit.map((a) => [a.action, a.reason])).toEqual(
      expect.arrayContaining([
        ['correct', 'corrected by the person (/fix in the terminal)'],
        ['pin', 'pinned by the person (/pin in the terminal)'],
      ]),
    );

    // `/why` of the new version (first now: a stated fact is certain) shows what it said before.
    const why = await chat(key, '/memories', '/why 1');
    expect(why.stdout).toContain('1. Jordi is my husband\n');
    expect(why.stdout).toMatch(/Before, it said:\n• until \d{4}-\d\d-\d\d \d\d:\d\d.*“Jordi is an acquaintance of Ann”/);
  }, 240_000);

  it('a pinned memory survives the decay job that fades or lowers an equal unpinned one', async () => {
    const key = 'terminal:dee';
    const longAgo = new Date(Date.now() - 400 * DAY_MS);
    const [pinnedEvent, event, pinnedFact, fact] = await seed(key, [
      { content: 'Dee sees the dentist on 2025-09-10', category: 'schedule', confidence: 0.9, at: longAgo },
      { content: 'Dee has a haircut booked on 2025-09-11', category: 'schedule', confidence: 0.9, at: longAgo },
      { content: 'Dee is allergic to penicillin', confidence: 0.9, at: longAgo },
      { content: 'Dee collects vintage stamps', confidence: 0.9, at: longAgo },
    ]);
    expect(await cli('memories', 'pin', '--scope', key, '--id', pinnedEvent!)).toContain('pinned: Dee sees the dentist');
    await cli('memories', 'pin', '--scope', key, '--id', pinnedFact!);
    const report = await withCore((core) => core.scheduler.runDecay(new Date()));
    expect(report).toBeDefined();
    const [pe, e, pf, f] = await Promise.all([pinnedEvent!, event!, pinnedFact!, fact!].map(memoryRow));
    // The unpinned twins: the passed event faded, the unconfirmed fact lost confidence.
    expect({ event: e!.active, fact: f!.confidence < 0.9 }).toEqual({ event: false, fact: true });
    expect({ event: pe!.active, eventConfidence: pe!.confidence, fact: pf!.active, factConfidence: pf!.confidence }).toEqual({
      event: true,
      eventConfidence: 0.9,
      fact: true,
      factConfidence: 0.9,
    });
    // The operator's pins are audited as theirs.
    const pins = await withCore((core) => core.db.prisma.auditEvent.count({ where: { action: 'pin', reason: 'pinned by the operator (the CLI)' } }));
    expect(pins).toBe(2);
  }, 240_000);

  it.each([
    ['the model deletes the first memory it is shown', 'first' as const],
    ['the model answers nonsense (FIFO)', 'broken' as const],
  ])(
    'capped mode never evicts a pinned memory: %s',
    async (_name, how) => {
      decision = how;
      const key = `terminal:cap-${how}`;
      const hour = 3_600_000;
      const [oldest, second] = await seed(key, [
        { content: 'Ann grew up in Vigo', confidence: 0.8, at: new Date(Date.now() - 3 * hour) },
        { content: 'Ann works as a nurse', confidence: 0.8, at: new Date(Date.now() - 2 * hour) },
      ]);
      await cli('memories', 'pin', '--scope', key, '--id', oldest!);
      const run = await chat(key, '/settings capped 2', 'I picked figs today', '/end');
      expect(run.code).toBe(0);
      const rows = await withCore((core) => core.db.prisma.memory.findMany({ where: { scope: { key }, active: true, validTo: null } }));
      expect(rows.map((r) => r.content).sort()).toEqual(['Ann grew up in Vigo', 'Ann likes figs in autumn']);
      expect((await memoryRow(oldest!)).pinned).toBe(true);
      expect(await withCore((core) => core.db.prisma.memory.count({ where: { id: second! } }))).toBe(0);
    },
    240_000,
  );

  it('the CLI corrects and unpins as the operator; export and import-scope keep pinned', async () => {
    const key = 'terminal:eve';
    const [first, second] = await seed(key, [
      { content: 'Eve lives in Graz', confidence: 0.9 },
      { content: 'Eve keeps bees', confidence: 0.8 },
    ]);
    await cli('memories', 'pin', '--scope', key, '--id', first!);
    await cli('memories', 'pin', '--scope', key, '--id', second!);
    const fixed = JSON.parse(await cli('memories', 'fix', '--scope', key, '--id', first!, '--text', 'Eve lives in Linz', '--json')) as {
      memory: { id: string; content: string; pinned: boolean };
    };
    // The new version keeps the pin: the pin is on what the memory is about.
    expect(fixed.memory).toMatchObject({ content: 'Eve lives in Linz', pinned: true });
    expect(await cli('memories', 'unpin', '--scope', key, '--id', second!)).toContain('unpinned: Eve keeps bees');
    const bad = await runCli(['memories', 'fix', '--scope', key, '--id', fixed.memory.id], env);
    expect({ code: bad.code, stderr: bad.stderr }).toMatchObject({ code: 2, stderr: expect.stringMatching(/memories fix needs --text/i) });
    const elsewhere = await runCli(['memories', 'pin', '--scope', 'terminal:ann', '--id', second!], env);
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stdout).not.toContain('Eve');

    const file = path.join(root, 'eve.json');
    await cli('export', '--scope', key, '--out', file);
    const document = JSON.parse(fs.readFileSync(file, 'utf8')) as { memories: Array<{ content: string; pinned?: boolean }> };
    expect(document.memories.map((m) => [m.content, m.pinned]).sort()).toEqual([
      ['Eve keeps bees', false],
      ['Eve lives in Graz', true],
      ['Eve lives in Linz', true],
    ]);
    await cli('import-scope', file, '--as', 'terminal:eve-copy');
    const copied = await withCore((core) => core.db.prisma.memory.findMany({ where: { scope: { key: 'terminal:eve-copy' } } }));
    expect(copied.map((m) => [m.content, m.pinned]).sort()).toEqual([
      ['Eve keeps bees', false],
      ['Eve lives in Graz', true],
      ['Eve lives in Linz', true],
    ]);
    const audit = await withCore((core) =>
      core.db.prisma.auditEvent.findMany({ where: { scope: { key }, action: { in: ['correct', 'unpin'] } }, select: { action: true, reason: true } }),
    );
    expect(audit.map((a) => [a.action, a.reason]).sort()).toEqual([
      ['correct', 'corrected by the operator (the CLI)'],
      ['unpin', 'unpinned by the operator (the CLI)'],
    ]);
  }, 240_000);
});
