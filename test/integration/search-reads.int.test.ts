/**
 * Search's hot reads on SQLite keep their prepared statements (sqlite-reads.ts): a reply context
 * asked again prepares none of its full-text and row reads, where every read used to be prepared
 * anew through Prisma; and the reads still answer after the client disconnects and reconnects.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

describe('search reads on SQLite', () => {
  let core: Core;
  let scopeId: string;
  const prepared: string[] = [];
  const now = new Date('2026-03-10T12:00:00Z');
  const turns = [
    'We talked about the hiking trip to the Pyrenees',
    'Remind me to buy new boots for the hike',
    'My sister adopted a cat called Pumpernickel',
    'The boots should be waterproof',
    'I started a new job at the Lisbon aquarium',
    'The Pyrenees trip is in June',
  ];

  beforeAll(async () => {
    // Spied before the store opens: the adapter binds the connection's prepare when it connects.
    const prepare = Database.prototype.prepare;
    jest.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
      prepared.push(sql);
      return prepare.call(this, sql);
    });
    core = await createCore(loadConfig({ env: { DATA_DIR: tempDir() }, envFile: false }), memoryLogger().logger, {
      embedder: createHashEmbedder({ dimension: 256 }),
    });
    await core.episodeService.ingestMany(
      { key: 'reads', channel: 'test' },
      turns.map((content, i) =>
        core.episodeService.normalize(
          { content, externalId: `t-${i}`, conversationId: 'c1', timestamp: new Date(now.getTime() - (turns.length - i) * 86_400_000).toISOString() },
          'test',
        ),
      ),
    );
    await core.embeddingWorker.drain();
    scopeId = (await core.scopes.findByKey('reads'))!.id;
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await core?.close();
  });

  const ask = (message: string) => core.context.retrieveContext({ scopeId, message, now, budgetTokens: 2_000 });
  /** Statements of search's full-text and row reads (Prisma's own queries name tables in backticks). */
  const searchReads = (sqls: readonly string[]) =>
    sqls.filter((sql) => sql.includes('search_fts') || sql.includes('search_scope') || sql.includes('"Episode"'));

  it('prepares the full-text and row reads of a reply context once, not on every context', async () => {
    const first = await ask('what is the name of the cat my sister adopted near the Pyrenees?');
    expect(first.items.map((i) => i.text).join('\n')).toContain('Pumpernickel');
    prepared.length = 0;
    const again = await ask('what is the name of the cat my sister adopted near the Pyrenees?');
    expect(again.items).toEqual(first.items);
    expect(searchReads(prepared)).toEqual([]);
    // Another question of as many words reads through the same statements.
    prepared.length = 0;
    const other = await ask('which waterproof boots should I buy for the Pyrenees hike in June?');
    expect(other.items.map((i) => i.text).join('\n')).toContain('waterproof');
    expect(searchReads(prepared)).toEqual([]);
  });

  it('reads through the new connection after the client disconnected and connected again', async () => {
    const before = await ask('where is my new job?');
    await core.db.prisma.$disconnect();
    const after = await ask('where is my new job?');
    expect(after.items).toEqual(before.items);
    expect(after.items.map((i) => i.text).join('\n')).toContain('Lisbon aquarium');
  });
});
