/**
 * Forgetting at the edges, through the CLI as a person runs it (child processes on a real SQLite
 * file): the export files Nocturne wrote, wherever they went (an `--out` path, the chat `/export`
 * run from another working folder), lose the forgotten text even when it sits deep in a long
 * message; forgetting by words matches as search does (accents folded) and reaches text that lives
 * only in a model-written summary or an entity; the Markdown exports lose an earlier version's
 * source message and an entity the forget deleted; and the preview counts exactly what `--yes`
 * then changes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import type { ForgetCounts } from '../../src/memory/forget/forget-effects';
import { FORGOTTEN_TEXT } from '../../src/memory/forget/forget-service';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase, type Database } from '../../src/storage/database';
import { tempDir } from '../support/databases';
import { cleanEnv, nodeArgs, ROOT, runCli, runCommand } from '../support/run-process';

/** Each CLI run starts a process with tsx (~3-10 s on a loaded 2-core machine); a test runs up to eight. */
const CLI_TEST_TIMEOUT_MS = 240_000;

/** Filler before the word in the long message: ~2 KB of paragraphs, so the word follows a line break. */
const LONG_PARAGRAPHS = 24;

/** Every file under `dir` holding `word` (case-insensitive), as `grep -ril` would list them. */
function filesHolding(dir: string, word: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) return filesHolding(file, word);
    return fs.readFileSync(file, 'utf8').toLowerCase().includes(word.toLowerCase()) ? [file] : [];
  });
}

describe('forget at the edges (CLI, SQLite)', () => {
  let env: NodeJS.ProcessEnv;
  let dataDir: string;
  let exportsDir: string;
  let workDir: string;
  let db: Database;
  let scopeId: string;
  const now = Date.now();
  const at = (minutes: number) => new Date(now - 6 * 3_600_000 + minutes * 60_000);
  let turn = 0;

  async function episode(content: string, role: 'user' | 'agent' = 'user', summary: string | null = null): Promise<string> {
    const row = await db.prisma.episode.create({
      data: {
        scopeId,
        channel: 'terminal',
        role,
        author: role === 'user' ? 'Ana' : null,
        content,
        summary,
        timestamp: at(turn++),
        contentHash: createHash('sha256').update(content).digest('hex'),
      },
    });
    return row.id;
  }

  async function cli(args: string[]): Promise<string> {
    const result = await runCli(args, env);
    expect({ args, code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({ args, code: 0, stderr: '' });
    return result.stdout;
  }

  async function forgetJson(words: string, yes: boolean): Promise<{ applied: boolean; episodes: number; episodesRedacted?: number; counts?: ForgetCounts }> {
    return JSON.parse(await cli(['forget', '--scope', 'ana', '--words', words, ...(yes ? ['--yes'] : []), '--json'])) as never;
  }

  beforeAll(async () => {
    dataDir = path.join(tempDir('nocturne-forget-edges-'), 'data');
    exportsDir = path.join(dataDir, 'exports');
    workDir = tempDir('nocturne-forget-edges-cwd-');
    env = cleanEnv({ DATA_DIR: dataDir });
    const config = loadConfig({ env: { DATA_DIR: dataDir }, envFile: false });
    db = await openDatabase({ database: config.database, logger: createSilentLogger() });
    scopeId = (await db.prisma.scope.create({ data: { key: 'ana', channel: 'terminal', title: 'Ana' } })).id;

    // A long message with the word after a line break, deep in it.
    const filler = Array.from({ length: LONG_PARAGRAPHS }, (_, i) => `Paragraph ${i}: the garden, the weather, the neighbours and the week ahead.`).join(
      '\n\n',
    );
    await episode(`${filler}\nQuokkaville is where the ferry leaves from, I think.`);
    // An earlier version learned from a message without the words, then the version with them.
    const islands = await episode('I keep thinking about the islands again, Jordi suggested them.');
    const decided = await episode('Decided: Menorca in June!');
    await episode('Lovely, June on the islands sounds wonderful.', 'agent');
    // Text that lives only in a model-written summary.
    await episode('We talked about holidays for a long while.', 'user', 'Ana weighs a Balearic holiday against the mountains');
    const merce = await episode('My mother-in-law visits on Sundays.');
    await db.prisma.$transaction(async (tx) => {
      const v1 = await createMemory(
        tx,
        { scopeId, category: 'goal', content: 'Ana thinks about visiting some islands', confidence: 0.8, sourceEpisodeIds: [islands] },
        { now: at(60) },
      );
      await supersedeMemory(tx, scopeId, v1.id, { content: 'Ana will visit Menorca in June', sourceEpisodeIds: [decided] }, { now: at(61), reason: 'decided' });
      await createMemory(tx, { scopeId, category: 'fact', content: 'Ana works as a nurse', confidence: 0.9 }, { by: 'owner', now: at(62) });
    });
    // An entity known only from the earlier version's message, and one named with an accent.
    const jordi = await db.prisma.entity.create({ data: { scopeId, key: 'jordi', name: 'Jordi Puig', kind: 'person' } });
    await db.prisma.entityObservation.create({ data: { scopeId, entityId: jordi.id, episodeId: islands, content: 'Jordi suggested the islands' } });
    const mother = await db.prisma.entity.create({
      data: { scopeId, key: 'merce', name: 'Mercè', kind: 'person', attributes: { relation: "Jordi's mother" } },
    });
    await db.prisma.entityObservation.create({ data: { scopeId, entityId: mother.id, episodeId: merce, content: 'visits on Sundays' } });
  });
  afterAll(async () => db?.close());

  it(
    'takes a word deep in a long message out of a JSON export written to an --out path under DATA_DIR/exports',
    async () => {
      const out = path.join(exportsDir, 'ana.json');
      await cli(['export', '--scope', 'ana', '--out', out]);
      expect(filesHolding(exportsDir, 'quokkaville')).toEqual([out]);
      const done = await forgetJson('quokkaville', true);
      expect(done.applied).toBe(true);
      expect(filesHolding(exportsDir, 'quokkaville')).toEqual([]);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'finds the chat /export run from another working folder, and the forget scrubs it',
    async () => {
      await cli(['export', '--scope', 'ana', '--format', 'markdown']);
      // `npm run cli -- chat` started from another folder (the built CLI named by its path).
      const chat = await runCommand(
        process.execPath,
        nodeArgs('src/cli/index.ts', ['chat', '--scope', 'ana', '--name', 'Ana']),
        env,
        workDir,
        '/export\n/quit\n',
      );
      expect({ code: chat.code, stderr: chat.code === 0 ? '' : chat.stderr }).toEqual({ code: 0, stderr: '' });
      expect(fs.readdirSync(workDir)).toEqual([]);
      expect(filesHolding(exportsDir, 'menorca').length).toBeGreaterThanOrEqual(3);
      expect(filesHolding(exportsDir, 'Jordi suggested').length).toBeGreaterThanOrEqual(2);

      // The preview counts what --yes changes: the messages of both versions, not only the one holding the word.
      const preview = await forgetJson('menorca', false);
      const placeholdersBefore = await db.prisma.episode.count({ where: { scopeId, content: FORGOTTEN_TEXT } });
      const done = await forgetJson('menorca', true);
      const replaced = (await db.prisma.episode.count({ where: { scopeId, content: FORGOTTEN_TEXT } })) - placeholdersBefore;
      // Every file Nocturne wrote lost the version with the words, the earlier version's message and the deleted entity.
      const left = Object.fromEntries(
        ['menorca', 'Jordi suggested', 'thinking about the islands', 'Jordi Puig'].map((gone) => [
          gone,
          filesHolding(exportsDir, gone).map((f) => path.relative(exportsDir, f)),
        ]),
      );
      expect({ previewed: preview.episodes, replaced, reported: done.episodesRedacted, left }).toEqual({
        previewed: replaced,
        replaced,
        reported: replaced,
        left: { menorca: [], 'Jordi suggested': [], 'thinking about the islands': [], 'Jordi Puig': [] },
      });
      expect(preview.counts).toEqual(done.counts);
      expect(done.counts).toMatchObject({ memories: 2, messages: 2, entities: 1 });
      expect(filesHolding(exportsDir, 'Ana works as a nurse').length).toBeGreaterThan(0);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'forgets words that live only in a summary or an entity, with accents folded as search folds them',
    async () => {
      await cli(['export', '--scope', 'ana', '--format', 'markdown']);
      const summary = await forgetJson('balearic', false);
      const summaryDone = await forgetJson('balearic', true);
      const merce = await forgetJson('merce', false);
      const merceDone = await forgetJson('merce', true);
      const exported = (await cli(['export', '--scope', 'ana'])).toLowerCase();
      const left = Object.fromEntries(
        ['balearic', 'mercè', "jordi's mother"].map((gone) => [gone, { inExport: exported.includes(gone), files: filesHolding(exportsDir, gone).length }]),
      );
      const nowhere = { inExport: false, files: 0 };
      expect(left).toEqual({ balearic: nowhere, mercè: nowhere, "jordi's mother": nowhere });
      expect(await db.prisma.entity.count({ where: { scopeId, name: 'Mercè' } })).toBe(0);
      // Offered with what changes, and the confirmation changes exactly that.
      expect(summary.counts).toMatchObject({ memories: 0, messages: 0, summaries: 1 });
      expect(summaryDone.counts).toEqual(summary.counts);
      expect(merce.counts).toMatchObject({ entities: 1 });
      expect(merceDone.counts).toEqual(merce.counts);
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
