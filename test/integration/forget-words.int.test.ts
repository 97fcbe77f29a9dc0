/**
 * `npm run cli -- forget --words X --yes` (a child process, as a person runs it) on a real SQLite
 * file: X is gone from every text Nocturne holds for the scope, not only from the memories that
 * matched: the person's and the agent's messages that mention it without having taught a memory,
 * a summary the model wrote, episode metadata and tags, entity observations, attributes and
 * names, audit and link reasons, the full-text and vector indexes, and the Markdown export
 * Nocturne wrote under DATA_DIR/exports. `search` for X then finds nothing holding it.
 *
 * And the preview of forgetting by words lists every version of every matched memory: what the
 * owner confirms is exactly what goes ("black coffee" matched an old version; its current version
 * goes too, so it is listed).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createMemory, linkMemories, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { scanSqliteTables } from '../chaos/chaos-support';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { migratedDataDir, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli } from '../support/run-process';

const SCOPE = 'terminal:ana';
const CLI_TIMEOUT = 240_000;

/** Every file under `dir` whose text holds `needle` (case-insensitive). */
function filesHolding(dir: string, needle: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => fs.readFileSync(f, 'utf8').toLowerCase().includes(needle));
}

describe('forget --words reaches every text of the scope (CLI, SQLite)', () => {
  let ollama: OllamaDouble;
  let env: NodeJS.ProcessEnv;
  let dataDir: string;
  let core: Core;
  let scopeId: string;
  const ids: Record<string, string> = {};

  async function episode(role: 'user' | 'agent', content: string, conversationId: string, metadata?: Record<string, unknown>): Promise<string> {
    const { episode } = await core.episodeService.ingest(
      { key: SCOPE, channel: 'terminal', title: 'Ana' },
      { role, content, author: role === 'user' ? 'Ana' : 'Nocturne', conversationId, metadata },
    );
    return episode!.id;
  }

  /** Where the database still holds `needle`: "table.column" places. */
  const places = (needle: string) =>
    [...new Set(scanSqliteTables(path.join(dataDir, 'nocturne.db'), [needle]).hits.map((h) => `${h.table}.${h.column}`))].sort();

  beforeAll(async () => {
    ollama = await startOllamaDouble();
    dataDir = migratedDataDir(path.join(tempDir('nocturne-forget-words-'), 'data'));
    env = cleanEnv({ DATA_DIR: dataDir, EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url });
    const config = loadConfig({ env: { DATA_DIR: dataDir, EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url, TZ: 'UTC' }, envFile: false });
    core = await createCore(config, memoryLogger().logger);
    const taught = await episode('user', 'I cooked saffron risotto for Bea yesterday.', 'c1');
    await episode('agent', 'That sounds like a lovely dinner.', 'c1');
    await episode('user', 'Tomorrow I will try the saffron risotto again, with more butter.', 'c1');
    await episode('agent', 'Good luck with the saffron risotto tomorrow!', 'c1');
    const walk = await episode('user', 'I went for a long walk by the river.', 'c2');
    await episode('user', 'Bea is coming over on Friday.', 'c2', { topics: ['saffron risotto'] });
    scopeId = (await core.scopes.findByKey(SCOPE))!.id;
    const prisma = core.db.prisma;
    await prisma.episode.update({ where: { id: walk }, data: { summary: 'Ana walked by the river and planned saffron risotto' } });
    const now = new Date();
    await prisma.$transaction(async (tx) => {
      ids.risotto = (
        await createMemory(tx, { scopeId, category: 'interest', content: 'Ana cooks saffron risotto', confidence: 0.9, sourceEpisodeIds: [taught] }, { now })
      ).id;
      ids.walks = (await createMemory(tx, { scopeId, category: 'routine', content: 'Ana walks by the river', confidence: 0.9 }, { now, by: 'owner' })).id;
      ids.bea = (
        await createMemory(tx, { scopeId, category: 'relationship', content: 'Bea is a close friend of Ana', confidence: 0.9 }, { now, by: 'owner' })
      ).id;
      await linkMemories(tx, scopeId, ids.walks, ids.bea, 'related', 0.5, { now, reason: 'Bea joins the walks before the saffron risotto' });
      ids.coffee = (
        await createMemory(
          tx,
          { scopeId, category: 'preference', content: 'Ana drinks black coffee', confidence: 0.9 },
          { now: new Date(now.getTime() - 60_000), by: 'owner' },
        )
      ).id;
      ids.latte = (
        await supersedeMemory(tx, scopeId, ids.coffee, { content: 'Ana switched to oat milk lattes' }, { now, reason: 'changed her mind', by: 'owner' })
      ).current.id;
    });
    const bea = await prisma.entity.create({
      data: { scopeId, key: 'bea', name: 'Bea', kind: 'person', favorability: 0.6, attributes: { relation: 'friend', 'favourite dish': 'saffron risotto' } },
    });
    await prisma.entityObservation.create({ data: { scopeId, entityId: bea.id, content: 'Bea asked for the saffron risotto recipe' } });
    await prisma.entity.create({ data: { scopeId, key: 'saffron risotto', name: 'Saffron risotto', kind: 'thing', favorability: 0.3 } });
    await regenerateSoul(prisma, scopeId, { now });
    await core.embeddingWorker.drain();
    await core.close();
    const exported = await runCli(['export', '--scope', SCOPE, '--format', 'markdown'], env);
    expect({ code: exported.code, stderr: exported.code === 0 ? '' : exported.stderr }).toEqual({ code: 0, stderr: '' });
  }, CLI_TIMEOUT);

  afterAll(async () => {
    await ollama?.stop();
  });

  it('starts with the words in every place (so the checks can fail)', () => {
    expect(places('saffron')).toEqual(
      expect.arrayContaining([
        'Episode.content',
        'Episode.summary',
        'EpisodeTag.value',
        'Memory.content',
        'MemoryLink.reason',
        'Entity.attributes',
        'Entity.name',
        'EntityObservation.content',
        'Profile.soul',
        'search_fts_data.block',
      ]),
    );
    expect(filesHolding(path.join(dataDir, 'exports'), 'saffron').length).toBeGreaterThan(0);
  });

  it(
    'lists every version of a matched memory in the preview (what goes is what is shown)',
    async () => {
      const preview = await runCli(['forget', '--scope', SCOPE, '--words', 'black coffee', '--json'], env);
      expect(preview.code).toBe(0);
      const shown = (JSON.parse(preview.stdout) as { matches: Array<{ id: string; state: string }> }).matches;
      expect(shown.map((m) => [m.id, m.state]).sort()).toEqual(
        [
          [ids.coffee, 'superseded'],
          [ids.latte, 'active'],
        ].sort(),
      );
      const text = await runCli(['forget', '--scope', SCOPE, '--words', 'black coffee'], env);
      expect(text.stdout).toContain('Ana switched to oat milk lattes');
    },
    CLI_TIMEOUT,
  );

  it(
    'forget --words --yes leaves the words nowhere: tables, indexes, exports, search',
    async () => {
      const done = await runCli(['forget', '--scope', SCOPE, '--words', 'saffron risotto', '--yes', '--json'], env);
      expect({ code: done.code, stderr: done.code === 0 ? '' : done.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(done.stdout) as { removedIds: string[] }).removedIds).toEqual([ids.risotto]);

      expect(places('saffron')).toEqual([]);
      expect(places('risotto')).toEqual([]);
      expect(filesHolding(path.join(dataDir, 'exports'), 'saffron')).toEqual([]);
      // The export is still there, minus the forgotten lines.
      expect(filesHolding(path.join(dataDir, 'exports'), 'river').length).toBeGreaterThan(0);
      const search = await runCli(['search', '--scope', SCOPE, '--query', 'saffron risotto', '--json'], env);
      expect(search.code).toBe(0);
      const results = (JSON.parse(search.stdout) as { results: Array<{ content: string }> }).results;
      expect(results.filter((r) => /saffron|risotto/i.test(r.content))).toEqual([]);
      // What does not hold the words stays.
      const config = loadConfig({ env: { DATA_DIR: dataDir, EMBEDDER: 'ollama', OLLAMA_HOST: ollama.url }, envFile: false });
      const after = await createCore(config, memoryLogger().logger);
      try {
        expect(await after.db.prisma.memory.count({ where: { id: { in: [ids.walks, ids.bea] } } })).toBe(2);
        expect((await after.db.prisma.entity.findFirstOrThrow({ where: { scopeId, key: 'bea' } })).attributes).toEqual({ relation: 'friend' });
        expect(await after.db.prisma.episode.count({ where: { scopeId, content: { contains: 'river' } } })).toBe(1);
        expect(await after.db.prisma.vectorTombstone.count()).toBe(0);
      } finally {
        await after.close();
      }
    },
    CLI_TIMEOUT,
  );
});
