/**
 * Storing a batch of episodes: idempotent on (scope, externalId) and numbering the turns of each
 * conversation where it stopped, in one transaction. Kept apart from the repository's reads
 * because it is the one write of episodes and carries its own rules: a message redelivered or
 * imported twice adds nothing, and a writer racing us on the same external id makes us look again
 * rather than fail.
 */
import { uuidv7 } from '../shared/ids';
import type { EpisodeRecord, InsertResult, NewEpisode } from './episode-repository';
import type { Prisma, PrismaClient } from './prisma';

/** Ids and conversations looked up per statement (keeps `IN (...)` lists within every driver's limits). */
const LOOKUP_CHUNK = 500;

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === 'P2002';
}

/** Stores `episodes` in the scope, leaving out those already stored; the stored ones in input order. */
export async function insertEpisodes(prisma: PrismaClient, scopeId: string, episodes: readonly NewEpisode[]): Promise<InsertResult> {
  if (episodes.length === 0) return { inserted: [], duplicates: 0 };
  try {
    return await insertOnce(prisma, scopeId, episodes);
  } catch (error) {
    // A concurrent writer stored one of these external ids after our lookup: look again.
    if (isUniqueViolation(error)) return insertOnce(prisma, scopeId, episodes);
    throw error;
  }
}

async function insertOnce(prisma: PrismaClient, scopeId: string, episodes: readonly NewEpisode[]): Promise<InsertResult> {
  return prisma.$transaction(
    async (tx) => {
      const seen = new Set<string>();
      const externalIds = episodes.map((e) => e.externalId).filter((id): id is string => id !== null);
      for (let i = 0; i < externalIds.length; i += LOOKUP_CHUNK) {
        const found = await tx.episode.findMany({
          where: { scopeId, externalId: { in: externalIds.slice(i, i + LOOKUP_CHUNK) } },
          select: { externalId: true },
        });
        for (const row of found) seen.add(row.externalId as string);
      }
      // Turns continue each conversation where it stopped.
      const conversations = [...new Set(episodes.map((e) => e.conversationId).filter((id): id is string => id !== null))];
      const nextTurn = new Map<string, number>();
      for (let i = 0; i < conversations.length; i += LOOKUP_CHUNK) {
        const maxima = await tx.episode.groupBy({
          by: ['conversationId'],
          where: { scopeId, conversationId: { in: conversations.slice(i, i + LOOKUP_CHUNK) } },
          _max: { turn: true },
        });
        for (const row of maxima) nextTurn.set(row.conversationId as string, (row._max.turn ?? -1) + 1);
      }
      const rows: Prisma.EpisodeCreateManyInput[] = [];
      const tags: Prisma.EpisodeTagCreateManyInput[] = [];
      let duplicates = 0;
      for (const episode of episodes) {
        if (episode.externalId !== null) {
          if (seen.has(episode.externalId)) {
            duplicates += 1;
            continue;
          }
          seen.add(episode.externalId);
        }
        const id = uuidv7();
        let turn: number | null = null;
        if (episode.conversationId !== null) {
          turn = nextTurn.get(episode.conversationId) ?? 0;
          nextTurn.set(episode.conversationId, turn + 1);
        }
        rows.push({
          id,
          scopeId,
          channel: episode.channel,
          role: episode.role,
          author: episode.author,
          authorId: episode.authorId ?? null,
          content: episode.content,
          timestamp: episode.timestamp,
          conversationId: episode.conversationId,
          turn,
          externalId: episode.externalId,
          metadata: (episode.metadata ?? undefined) as Prisma.InputJsonValue | undefined,
          importance: episode.importance,
          contentHash: episode.contentHash,
        });
        for (const value of new Set(episode.topics)) tags.push({ scopeId, episodeId: id, kind: 'topic', value });
        for (const value of new Set(episode.entities)) tags.push({ scopeId, episodeId: id, kind: 'entity', value });
      }
      if (rows.length > 0) await tx.episode.createMany({ data: rows });
      if (tags.length > 0) await tx.episodeTag.createMany({ data: tags });
      const ids = rows.map((row) => row.id as string);
      const stored: EpisodeRecord[] = [];
      for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
        stored.push(...(await tx.episode.findMany({ where: { scopeId, id: { in: ids.slice(i, i + LOOKUP_CHUNK) } } })));
      }
      const byId = new Map(stored.map((row) => [row.id, row]));
      return { inserted: ids.map((id) => byId.get(id) as EpisodeRecord), duplicates };
    },
    { timeout: 60_000, maxWait: 30_000 },
  );
}
