/**
 * The crowd's way into a composed store (`evaluation/crowd.ts` knows only its port):
 * episodes through the episode service, as an import stores them (full-text index included),
 * vectors straight into the vector index, then the rows marked embedded so the embedding worker
 * does not embed a million texts again. Also reads the real turns the crowd copies, with the
 * vectors the embedding worker gave them. Here, beside the other evaluation runs, because it
 * takes its parts from the composed core.
 */
import type { Core } from '../core';
import type { CrowdSourceTurn, CrowdStore } from './crowd';

/** Vector reads per call, well under the index's batch limits. */
const READ_BATCH = 500;

/** A {@link CrowdStore} writing into `core`'s database and vector index. */
export function createCrowdStore(core: Core): CrowdStore {
  return {
    async ingest(scopeKey, episodes) {
      const normalized = episodes.map((e) =>
        core.episodeService.normalize(
          { content: e.content, author: e.author, externalId: e.externalId, conversationId: e.conversationId, timestamp: e.timestamp.toISOString() },
          'crowd',
        ),
      );
      const result = await core.episodeService.ingestMany({ key: scopeKey, channel: 'crowd' }, normalized);
      return { scopeId: result.scope.id, ids: result.ids };
    },
    async attachVectors(scopeId, vectors) {
      await core.vectorIndex.upsert(vectors.map((v) => ({ id: v.id, kind: 'episode' as const, scopeId, vector: v.vector })));
      await core.db.prisma.episode.updateMany({
        where: { scopeId, id: { in: vectors.map((v) => v.id) } },
        data: { embeddedWith: core.embedder.name },
      });
    },
  };
}

/**
 * The embedded turns of these scopes, each with its scope's speakers (the authors of its turns),
 * for the crowd to copy. Turns without a vector (not embedded) are left out.
 */
export async function readCrowdSources(core: Core, scopeIds: readonly string[]): Promise<CrowdSourceTurn[]> {
  const sources: CrowdSourceTurn[] = [];
  for (const scopeId of scopeIds) {
    const rows = await core.db.prisma.episode.findMany({ where: { scopeId }, orderBy: { id: 'asc' }, select: { id: true, content: true, author: true } });
    const speakers = [...new Set(rows.map((r) => r.author).filter((a): a is string => Boolean(a)))];
    for (let i = 0; i < rows.length; i += READ_BATCH) {
      const batch = rows.slice(i, i + READ_BATCH);
      const vectors = new Map(
        (
          await core.vectorIndex.get(
            scopeId,
            batch.map((r) => r.id),
          )
        ).map((r) => [r.id, r.vector]),
      );
      for (const row of batch) {
        const vector = vectors.get(row.id);
        if (vector) sources.push({ content: row.content, speakers, vector });
      }
    }
  }
  return sources;
}
