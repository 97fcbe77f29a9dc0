/**
 * Joining two identities merges one scope into the other (memory/scopes/scope-merge.ts) on both
 * databases the service runs on: a real SQLite file and a real PostgreSQL database. Both scopes
 * hold episodes, memories (the source's current ones restate the target's, so they fold), the
 * entity Bea, a digest of the same period, a profile, a conversation and bookkeeping rows (the
 * scope fixture), plus an episode only the source has, with a word nothing else uses.
 *
 * After `join`: the target holds the sum of the episodes and memories, the restatements are
 * folded (the target's current memories are not doubled), one Bea with both observations, one
 * digest and one profile; the full-text index finds the source's episode by its word under the
 * target and holds nothing under the source; no row of the data map is left under the source.
 * Running `join` again changes nothing.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { SCOPE_DATA_MAP } from '../../src/memory/scopes/scope-data-map';
import { delegateOf } from '../../src/memory/scopes/scope-data-walk';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { seedScope } from '../support/scope-fixture';

const TARGET = 'telegram:private:5101';
const SOURCE = 'terminal:ana';
/** A word only the source's extra episode holds. */
const KEYWORD = 'zanzibarite';
const EMBEDDING_DIMENSION = 64;
const MERGE_TIMEOUT_MS = 180_000;

/** Rows of every scoped model of the data map under `scopeId` (the scope row and link bookkeeping aside). */
async function rowsUnder(core: Core, scopeId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const entry of SCOPE_DATA_MAP) {
    if (entry.scope.by !== 'scopeId' && entry.scope.by !== 'optionalScopeId') continue;
    if (['Scope', 'IdentityLink', 'VectorTombstone', 'AuditEvent'].includes(entry.model)) continue;
    const delegate = delegateOf(core.db.prisma, entry) as unknown as { count(args: { where: Record<string, unknown> }): Promise<number> };
    counts[entry.table] = await delegate.count({ where: { scopeId } });
  }
  return counts;
}

const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));

function suite(name: string, env: () => Promise<Record<string, string>>): void {
  describe(`joining two identities merges their scopes (${name})`, () => {
    let core: Core | undefined;
    afterAll(async () => {
      await core?.close();
    });

    it(
      'moves every row, folds restatements, keeps one entity, digest and profile, indexes the moved text; again is a no-op',
      async () => {
        const config = loadConfig({ env: { DATA_DIR: tempDir('nocturne-merge-db-'), ...(await env()) }, envFile: false });
        core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: EMBEDDING_DIMENSION }) });
        const prisma = core.db.prisma;
        const target = await seedScope(prisma, TARGET);
        const source = await seedScope(prisma, SOURCE);
        await core.episodeService.ingestMany({ key: SOURCE, channel: 'terminal' }, [
          core.episodeService.normalize(
            {
              role: 'user',
              author: 'Ana',
              content: `I collect ${KEYWORD} stones from the beach.`,
              timestamp: '2024-02-05T10:00:00.000Z',
              externalId: 'only-source',
            },
            'terminal',
          ),
        ]);
        const before = { target: await rowsUnder(core, target.scopeId), source: await rowsUnder(core, source.scopeId) };
        const currentBefore = await prisma.memory.count({ where: { scopeId: target.scopeId, active: true, validTo: null } });
        expect(await core.fullText.search({ scopeId: target.scopeId, kind: 'episode', query: KEYWORD, limit: 5 })).toHaveLength(0);

        const joined = await core.identities.join(SOURCE, TARGET, { now: new Date('2024-03-01T00:00:00Z'), reason: 'test' });

        expect(joined.scope.id).toBe(target.scopeId);
        expect(joined.merge?.foldedMemories).toBeGreaterThan(0);
        const after = { target: await rowsUnder(core, target.scopeId), source: await rowsUnder(core, source.scopeId) };
        expect(nonZero(after.source)).toEqual({});
        expect(after.target.episodes).toBe(before.target.episodes! + before.source.episodes!);
        expect(after.target.memories).toBe(before.target.memories! + before.source.memories!);
        expect(after.target.conversations).toBe(before.target.conversations! + before.source.conversations!);
        // The same Bea, digest period and profile on both sides: the target's stay, once.
        expect(await prisma.entity.findMany({ where: { scopeId: target.scopeId }, select: { key: true } })).toEqual([{ key: 'bea' }]);
        expect(after.target.entityObservations).toBe(before.target.entityObservations! + before.source.entityObservations!);
        expect(after.target.digests).toBe(before.target.digests);
        expect(after.target.profiles).toBe(before.target.profiles);
        // Restatements folded: no more current memories than the target had.
        expect(await prisma.memory.count({ where: { scopeId: target.scopeId, active: true, validTo: null } })).toBe(currentBefore);

        const hits = await core.fullText.search({ scopeId: target.scopeId, kind: 'episode', query: KEYWORD, limit: 5 });
        expect(hits).toHaveLength(1);
        expect(await core.fullText.countDocuments(source.scopeId, 'episode')).toBe(0);
        expect(await core.fullText.countDocuments(source.scopeId, 'memory')).toBe(0);
        expect(await core.fullText.countDocuments(target.scopeId, 'episode')).toBe(after.target.episodes);

        const again = await core.identities.join(SOURCE, TARGET, { now: new Date('2024-03-02T00:00:00Z'), reason: 'test again' });
        expect(again.merge).toBeNull();
        expect({ target: await rowsUnder(core, target.scopeId), source: await rowsUnder(core, source.scopeId) }).toEqual(after);
        // eslint-disable-next-line no-console
        console.log(`scope-merge ${name}: moved ${JSON.stringify(joined.merge?.moved)}, folded ${joined.merge?.foldedMemories}`);
      },
      MERGE_TIMEOUT_MS,
    );
  });
}

suite('SQLite', async () => ({}));
if (postgresAvailable()) suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
else it.skip(`PostgreSQL: ${postgresSkipReason()}`, () => undefined);
