/**
 * Forgetting on a real SQLite file and a real PostgreSQL database, with the real full-text index
 * and the sqlite-vec vector index: after `forget`, the text is in no memory row, no full-text
 * row, no vector, not in the soul, no digest and no audit row, while the audit still says that
 * something was forgotten. Also: forgetting by words (preview, then confirm), `/forget N` from a
 * digest, scope isolation, and the purge of a whole scope.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createForgetService, type ForgetService } from '../../src/memory/forget/forget-service';
import { contradictMemory, createMemory, linkMemories, reinforceMemory, supersedeMemory, type Tx } from '../../src/memory/memories/memory-writer';
import { NotFoundError } from '../../src/shared/errors';
import { buildDigest, digestItem, digestItems, markSent } from '../../src/memory/digests/digest';
import { regenerateSoul, soulMarkdown } from '../../src/memory/profiles/soul';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const HOUR = 3_600_000;
const T0 = new Date('2026-03-01T08:00:00Z');
const at = (hours: number) => new Date(T0.getTime() + hours * HOUR);

function suite(name: string, env: () => Promise<Record<string, string>>) {
  describe(`forgetting on ${name}`, () => {
    let core: Core;
    let forget: ForgetService;
    let ana: string;
    let ben: string;
    const ids: Record<string, string> = {};
    const tx = <T>(fn: (t: Tx) => Promise<T>) => core.db.prisma.$transaction(fn);

    /** Every place the service keeps text, as one string per place. */
    async function everywhere(scopeId: string) {
      const prisma = core.db.prisma;
      return {
        memories: JSON.stringify(await prisma.memory.findMany({ where: { scopeId } })),
        audit: JSON.stringify(await prisma.auditEvent.findMany({ where: { scopeId } })),
        digests: JSON.stringify(await prisma.digest.findMany({ where: { scopeId } })),
        profile: JSON.stringify(await prisma.profile.findMany({ where: { scopeId } })),
        soul: await soulMarkdown(prisma, scopeId),
      };
    }

    async function fullTextIds(scopeId: string): Promise<string[]> {
      const rows = await core.db.prisma.$queryRaw<
        Array<{ id: string }>
      >`SELECT "ref_id" AS id FROM "search_doc" WHERE "scope_id" = ${scopeId} AND "kind" = 'memory'`;
      return rows.map((r) => r.id).sort();
    }

    async function vectorHits(scopeId: string, text: string): Promise<string[]> {
      const [vector] = await core.embedder.embed([text]);
      return (await core.vectorIndex.search({ scopeId, vector: vector!, limit: 50, kind: 'memory' })).map((h) => h.id);
    }

    beforeAll(async () => {
      const config = loadConfig({ env: { DATA_DIR: tempDir(), ...(await env()) }, envFile: false });
      core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 128 }) });
      forget = createForgetService({ prisma: core.db.prisma, index: core.vectorIndex, logger: core.logger, clock: () => at(20) });
      ana = (await core.scopes.ensure({ key: 'telegram:private:1', channel: 'telegram', title: 'Ana', ownerId: '1' })).id;
      ben = (await core.scopes.ensure({ key: 'telegram:private:2', channel: 'telegram', ownerId: '2' })).id;
      await core.db.prisma.scope.updateMany({ data: { createdAt: T0 } });
      await tx(async (t) => {
        ids.jazz = (
          await createMemory(
            t,
            { scopeId: ana, category: 'interest', content: 'Ana listens to jazz while cooking', confidence: 0.8 },
            { by: 'owner', now: at(1) },
          )
        ).id;
        ids.v1 = (
          await createMemory(
            t,
            { scopeId: ana, category: 'preference', content: 'Ana collects porcelain flamingos', confidence: 0.9 },
            { by: 'owner', now: at(1) },
          )
        ).id;
        await reinforceMemory(t, ana, ids.v1, undefined, { by: 'owner', now: at(2), reason: 'mentioned the flamingos again' });
        await linkMemories(t, ana, ids.jazz, ids.v1, 'related', 0.7, { now: at(2), reason: 'jazz records next to the flamingos' });
        ids.v2 = (
          await supersedeMemory(
            t,
            ana,
            ids.v1,
            { content: 'Ana collects porcelain flamingos and teapots' },
            { by: 'owner', now: at(3), reason: 'added teapots' },
          )
        ).current.id;
        await contradictMemory(t, ana, ids.jazz, ids.v2, { now: at(3), reason: 'flamingo hunting leaves no time for jazz' });
        ids.hiking = (
          await createMemory(
            t,
            { scopeId: ana, category: 'interest', content: 'Ana goes hiking in the Pyrenees', confidence: 0.7 },
            { by: 'owner', now: at(4) },
          )
        ).id;
        ids.dog = (
          await createMemory(
            t,
            { scopeId: ana, category: 'relationship', content: 'Ana has two dogs called Pim and Pom', confidence: 0.9 },
            { by: 'owner', now: at(4) },
          )
        ).id;
        ids.ben = (
          await createMemory(
            t,
            { scopeId: ben, category: 'preference', content: 'Ben also collects porcelain flamingos', confidence: 0.9 },
            { by: 'owner', now: at(1) },
          )
        ).id;
      });
      await core.embeddingWorker.drain();
      await regenerateSoul(core.db.prisma, ana, { now: at(5) });
      // One digest already sent, one waiting: both quote the flamingos.
      await markSent(core.db.prisma, (await buildDigest(core.db.prisma, ana, { periodEnd: at(2.5), now: at(2.5) })).id, at(2.6));
      await buildDigest(core.db.prisma, ana, { periodEnd: at(6), now: at(6) });
    });
    afterAll(async () => core?.close());

    it('starts with the text everywhere (so the checks below can fail)', async () => {
      const places = await everywhere(ana);
      for (const place of Object.values(places)) expect(place).toMatch(/flamingo/i);
      expect((await core.fullText.search({ scopeId: ana, kind: 'memory', query: 'flamingos', limit: 10 })).map((h) => h.id).sort()).toEqual(
        [ids.v1, ids.v2].sort(),
      );
      expect(await core.vectorIndex.count(ana, 'memory')).toBe(5);
      expect(await vectorHits(ana, 'Ana collects porcelain flamingos')).toEqual(expect.arrayContaining([ids.v1, ids.v2]));
    });

    it('rejects a memory of another scope and removes nothing', async () => {
      await expect(forget.forgetMemory(ana, ids.ben)).rejects.toBeInstanceOf(NotFoundError);
      await expect(forget.preview(ana, ids.ben)).rejects.toBeInstanceOf(NotFoundError);
      expect(await core.db.prisma.memory.count({ where: { id: ids.ben } })).toBe(1);
    });

    it('previews the whole supersession chain', async () => {
      const chain = await forget.preview(ana, ids.v1);
      expect(chain.map((m) => [m.id, m.state])).toEqual([
        [ids.v2, 'active'],
        [ids.v1, 'superseded'],
      ]);
    });

    it('forgets a memory and its chain from every store, keeping a forget event without the text', async () => {
      const soulBefore = (await core.db.prisma.profile.findUniqueOrThrow({ where: { scopeId: ana } })).version;
      const result = await forget.forgetMemory(ana, ids.v2, { reason: 'please forget that' });
      expect(result.removedIds.sort()).toEqual([ids.v1, ids.v2].sort());
      expect(result).toMatchObject({ digestsScrubbed: 2, vectorsDeleted: true, soulVersion: soulBefore + 1 });

      const places = await everywhere(ana);
      for (const [place, text] of Object.entries(places)) expect({ place, quotesIt: /flamingo|teapot/i.test(text) }).toEqual({ place, quotesIt: false });
      // Full-text index: no hit, and its rows are exactly the remaining memories.
      expect(await core.fullText.search({ scopeId: ana, kind: 'memory', query: 'flamingos teapots porcelain', limit: 10 })).toEqual([]);
      expect(await fullTextIds(ana)).toEqual([ids.jazz, ids.hiking, ids.dog].sort());
      // Vector index: gone from the count and from any search.
      expect(await core.vectorIndex.count(ana, 'memory')).toBe(3);
      const hits = await vectorHits(ana, 'Ana collects porcelain flamingos and teapots');
      expect(hits).not.toContain(ids.v1);
      expect(hits).not.toContain(ids.v2);
      // The soul still holds the rest; the digests keep their other items.
      expect(places.soul).toContain('Ana has two dogs called Pim and Pom');
      const digests = await core.db.prisma.digest.findMany({ where: { scopeId: ana }, orderBy: { periodEnd: 'asc' } });
      expect(digests.map((d) => d.status)).toEqual(['sent', 'pending']);
      expect(digestItems(digests[0]!).map((i) => i.text)).toEqual(['Ana listens to jazz while cooking']);
      expect(digestItems(digests[1]!).map((i) => i.text)).toEqual(['Ana goes hiking in the Pyrenees', 'Ana has two dogs called Pim and Pom']);
      // The audit says that something was forgotten, and by whom, not what.
      const event = await core.db.prisma.auditEvent.findFirstOrThrow({ where: { scopeId: ana, action: 'forget' } });
      expect(event).toMatchObject({ subjectType: 'memory', subjectId: ids.v2, after: { removed: 2, category: 'preference' }, reason: 'please forget that' });
      // Another scope's identical memory is untouched.
      expect(JSON.stringify(await everywhere(ben))).toContain('Ben also collects porcelain flamingos');
      expect(await core.vectorIndex.count(ben, 'memory')).toBe(1);
    });

    it('forgets by words after a preview, and /forget N from the latest digest', async () => {
      const none = await forget.forgetMatching(ana, 'the flamingos');
      expect(none.matches).toEqual([]);
      const preview = await forget.forgetMatching(ana, 'My DOG Pim');
      expect(preview.terms).toEqual(['dog', 'pim']);
      expect(preview.matches.map((m) => m.id)).toEqual([ids.dog]);
      expect(await core.db.prisma.memory.count({ where: { id: ids.dog } })).toBe(1); // nothing yet
      const result = await preview.confirm();
      expect(result.removedIds).toEqual([ids.dog]);
      expect(await core.fullText.search({ scopeId: ana, kind: 'memory', query: 'Pim Pom', limit: 10 })).toEqual([]);
      expect(await soulMarkdown(core.db.prisma, ana)).not.toMatch(/Pim|Pom/);
      // Confirming twice is harmless.
      expect((await preview.confirm()).removedIds).toEqual([]);

      const n = digestItems(await core.db.prisma.digest.findFirstOrThrow({ where: { scopeId: ana, status: 'pending' } })).find((i) =>
        i.text.includes('hiking'),
      )!.n;
      const memoryId = await digestItem(core.db.prisma, ana, n);
      expect(memoryId).toBe(ids.hiking);
      await forget.forgetMemory(ana, memoryId!);
      const pending = await core.db.prisma.digest.findFirstOrThrow({ where: { scopeId: ana, periodEnd: at(6) } });
      expect(pending).toMatchObject({ status: 'empty', content: '', items: [] });
      expect(JSON.stringify(await everywhere(ana))).not.toMatch(/Pyrenees|hiking/);
    });

    it('purges every memory of a scope', async () => {
      await tx((t) => createMemory(t, { scopeId: ana, category: 'fact', content: 'Ana was born in Porto', confidence: 0.9 }, { by: 'owner', now: at(7) }));
      await core.embeddingWorker.drain();
      expect(await forget.purgeScope(ana)).toBe(2);
      expect(await core.db.prisma.memory.count({ where: { scopeId: ana } })).toBe(0);
      expect(await fullTextIds(ana)).toEqual([]);
      expect(await core.vectorIndex.count(ana, 'memory')).toBe(0);
      const places = await everywhere(ana);
      expect(JSON.stringify(places)).not.toMatch(/jazz|Porto/);
      expect(places.soul).toContain('Nothing learned yet');
      expect(await core.db.prisma.auditEvent.count({ where: { scopeId: ana, action: 'forget', subjectType: 'scope' } })).toBe(1);
      expect(await core.db.prisma.memory.count({ where: { scopeId: ben } })).toBe(1);
      expect(await forget.purgeScope(ana)).toBe(0);
    });
  });
}

suite('SQLite', async () => ({}));

if (postgresAvailable()) {
  suite('PostgreSQL', async () => ({ DB_PROVIDER: 'postgres', DATABASE_URL: await createPostgresDatabase() }));
} else {
  it.skip(`forgetting on PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
}
