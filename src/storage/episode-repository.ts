/**
 * Episodes: every message, stored permanently. Writes are idempotent on (scope, externalId), so
 * importing the same file twice, or a channel redelivering a message, adds nothing (that write
 * and its turn numbering: episode-insert.ts).
 */
import { Prisma as SQL } from '../generated/sqlite/client';
import { insertEpisodes } from './episode-insert';
import type { Episode, Prisma, PrismaClient } from './prisma';
import { hasSqliteConnection, sqliteRead } from './sqlite-reads';

/** An episode ready to store (validated and normalized by the memory layer). */
export interface NewEpisode {
  readonly channel: string;
  readonly role: 'user' | 'agent' | 'system';
  readonly author: string | null;
  /** Who said it, as the channel names them (absent: nobody known). */
  readonly authorId?: string | null;
  readonly content: string;
  readonly timestamp: Date;
  readonly conversationId: string | null;
  readonly externalId: string | null;
  readonly metadata: Record<string, unknown> | null;
  readonly importance: number;
  readonly contentHash: string;
  readonly topics: readonly string[];
  readonly entities: readonly string[];
}

export type EpisodeRecord = Episode;

/**
 * The columns search reads to score and show an episode. Hybrid search reads hundreds of rows
 * per query, and Prisma's cost is turning them into objects: leaving out the metadata JSON,
 * hashes and sleep bookkeeping took the ~500 rows of a search at 100k episodes from ~11 to ~7 ms.
 */
const SEARCH_FIELDS = {
  id: true,
  channel: true,
  role: true,
  author: true,
  content: true,
  timestamp: true,
  conversationId: true,
  turn: true,
  externalId: true,
  importance: true,
} as const satisfies Prisma.EpisodeSelect;

export type EpisodeSearchRow = Pick<Episode, keyof typeof SEARCH_FIELDS>;

/**
 * The same columns for raw SQL: search reads its rows with one statement and no query plan of
 * Prisma's (turning a 250-id `findMany` into SQL and objects cost ~4.6 ms of CPU against ~3.1 ms
 * raw, measured at 100k episodes), the columns named in quotes as both databases spell them.
 */
const SEARCH_COLUMNS = SQL.raw(
  Object.keys(SEARCH_FIELDS)
    .map((column) => `"${column}"`)
    .join(', '),
);

/**
 * The same reads on SQLite's connection directly (sqlite-reads.ts), each one statement text
 * whatever the number of ids or positions (a JSON parameter), so it stays prepared. The positions
 * drive the lookup (CROSS JOIN keeps them the outer loop): one probe of the (scope, conversation,
 * turn) index each.
 */
const SEARCH_COLUMN_LIST = Object.keys(SEARCH_FIELDS)
  .map((column) => `e."${column}"`)
  .join(', ');
const ROWS_BY_ID = `SELECT ${SEARCH_COLUMN_LIST} FROM "Episode" e WHERE e."scopeId" = ? AND e."id" IN (SELECT "value" FROM json_each(?))`;
const ROWS_AT_TURNS =
  `SELECT ${SEARCH_COLUMN_LIST} FROM json_each(?) p CROSS JOIN "Episode" e ` +
  `WHERE e."scopeId" = ? AND e."conversationId" = p."value" ->> 0 AND e."turn" = p."value" ->> 1`;

/** A raw row with the types Prisma would give it (drivers differ in how they return times and numbers). */
function toSearchRow(row: EpisodeSearchRow): EpisodeSearchRow {
  return {
    ...row,
    timestamp: row.timestamp instanceof Date ? row.timestamp : new Date(row.timestamp as unknown as string | number),
    turn: row.turn === null ? null : Number(row.turn),
    importance: Number(row.importance),
  };
}

export interface InsertResult {
  /** The stored episodes, in input order. */
  readonly inserted: EpisodeRecord[];
  /** How many inputs were already stored (same externalId in this scope), or repeated in the batch. */
  readonly duplicates: number;
}

export interface ListEpisodesQuery {
  /** Only episodes at or after this time, oldest first. Without it: the latest `limit`, oldest first. */
  readonly since?: Date;
  readonly limit?: number;
}

export interface EpisodeRepository {
  insertMany(scopeId: string, episodes: readonly NewEpisode[]): Promise<InsertResult>;
  list(scopeId: string, query?: ListEpisodesQuery): Promise<EpisodeRecord[]>;
  get(scopeId: string, id: string): Promise<EpisodeRecord | null>;
  findByExternalId(scopeId: string, externalId: string): Promise<EpisodeRecord | null>;
  /**
   * The episodes of a scope with these ids (ids of other scopes are simply not found), with the
   * columns search needs only.
   */
  searchRows(scopeId: string, ids: readonly string[]): Promise<EpisodeSearchRow[]>;
  /**
   * The turns within `radius` of each given turn, in the same conversations (the given turns
   * included). One indexed range per conversation position.
   */
  neighbours(scopeId: string, positions: ReadonlyArray<{ conversationId: string; turn: number }>, radius: number): Promise<EpisodeRecord[]>;
  /**
   * The turns at exactly these positions (conversation and turn number), where they exist. Hybrid
   * search asks for the neighbours it does not hold yet rather than whole windows again.
   */
  atTurns(scopeId: string, positions: ReadonlyArray<{ conversationId: string; turn: number }>): Promise<EpisodeSearchRow[]>;
  count(scopeId: string): Promise<number>;
  /** The time of the scope's latest episode (null when it has none). */
  latestTimestamp(scopeId: string): Promise<Date | null>;
  /** Times of the scope's episodes of `role` at or after `since`, newest first, at most `limit`. */
  timesSince(scopeId: string, role: string, since: Date, limit: number): Promise<Date[]>;
  /** Topics and entities stored for an episode. */
  tags(scopeId: string, episodeId: string): Promise<{ topics: string[]; entities: string[] }>;
}

/** Ids looked up per statement (keeps `IN (...)` lists within every driver's limits). */
const LOOKUP_CHUNK = 500;

export function createEpisodeRepository(prisma: PrismaClient): EpisodeRepository {
  return {
    insertMany: (scopeId, episodes) => insertEpisodes(prisma, scopeId, episodes),
    async list(scopeId, query = {}) {
      const limit = Math.max(1, Math.min(query.limit ?? 50, 100_000));
      if (query.since) {
        return prisma.episode.findMany({
          where: { scopeId, timestamp: { gte: query.since } },
          orderBy: [{ timestamp: 'asc' }, { id: 'asc' }],
          take: limit,
        });
      }
      const latest = await prisma.episode.findMany({
        where: { scopeId },
        orderBy: [{ timestamp: 'desc' }, { id: 'desc' }],
        take: limit,
      });
      return latest.reverse();
    },
    get: (scopeId, id) => prisma.episode.findFirst({ where: { scopeId, id } }),
    async searchRows(scopeId, ids) {
      const out: EpisodeSearchRow[] = [];
      for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
        const chunk = ids.slice(i, i + LOOKUP_CHUNK);
        if (hasSqliteConnection(prisma)) {
          for (const row of await sqliteRead<EpisodeSearchRow>(prisma, ROWS_BY_ID, [scopeId, JSON.stringify(chunk)])) out.push(toSearchRow(row));
          continue;
        }
        const rows = await prisma.$queryRaw<EpisodeSearchRow[]>(
          SQL.sql`SELECT ${SEARCH_COLUMNS} FROM "Episode" WHERE "scopeId" = ${scopeId} AND "id" IN (${SQL.join([...chunk])})`,
        );
        for (const row of rows) out.push(toSearchRow(row));
      }
      return out;
    },
    async neighbours(scopeId, positions, radius) {
      if (positions.length === 0) return [];
      const out: EpisodeRecord[] = [];
      for (let i = 0; i < positions.length; i += 100) {
        out.push(
          ...(await prisma.episode.findMany({
            where: {
              scopeId,
              OR: positions.slice(i, i + 100).map((p) => ({ conversationId: p.conversationId, turn: { gte: p.turn - radius, lte: p.turn + radius } })),
            },
          })),
        );
      }
      return [...new Map(out.map((row) => [row.id, row])).values()];
    },
    async atTurns(scopeId, positions) {
      if (hasSqliteConnection(prisma)) {
        const unique = [...new Map(positions.map((p) => [`${p.turn}#${p.conversationId}`, [p.conversationId, p.turn]])).values()];
        const out: EpisodeSearchRow[] = [];
        for (let i = 0; i < unique.length; i += LOOKUP_CHUNK) {
          const chunk = JSON.stringify(unique.slice(i, i + LOOKUP_CHUNK));
          for (const row of await sqliteRead<EpisodeSearchRow>(prisma, ROWS_AT_TURNS, [chunk, scopeId])) out.push(toSearchRow(row));
        }
        return out;
      }
      const byConversation = new Map<string, number[]>();
      for (const p of positions) {
        const turns = byConversation.get(p.conversationId) ?? [];
        turns.push(p.turn);
        byConversation.set(p.conversationId, turns);
      }
      // One statement of one indexed lookup per conversation (UNION ALL): an OR of conversations
      // makes SQLite scan the whole scope (156 ms at 100k episodes), and one Prisma query per
      // conversation costs ~0.7 ms each.
      const out: EpisodeSearchRow[] = [];
      const groups = [...byConversation];
      for (let i = 0; i < groups.length; i += 200) {
        const selects = groups
          .slice(i, i + 200)
          .map(
            ([conversationId, turns]) =>
              SQL.sql`SELECT ${SEARCH_COLUMNS} FROM "Episode" WHERE "scopeId" = ${scopeId} AND "conversationId" = ${conversationId} AND "turn" IN (${SQL.join([...new Set(turns)])})`,
          );
        for (const row of await prisma.$queryRaw<EpisodeSearchRow[]>(SQL.join(selects, ' UNION ALL '))) out.push(toSearchRow(row));
      }
      return out;
    },
    findByExternalId: (scopeId, externalId) => prisma.episode.findUnique({ where: { scopeId_externalId: { scopeId, externalId } } }),
    count: (scopeId) => prisma.episode.count({ where: { scopeId } }),
    async latestTimestamp(scopeId) {
      const found = await prisma.episode.aggregate({ where: { scopeId }, _max: { timestamp: true } });
      return found._max.timestamp ?? null;
    },
    async timesSince(scopeId, role, since, limit) {
      const rows = await prisma.episode.findMany({
        where: { scopeId, role, timestamp: { gte: since } },
        orderBy: { timestamp: 'desc' },
        take: limit,
        select: { timestamp: true },
      });
      return rows.map((row) => row.timestamp);
    },
    async tags(scopeId, episodeId) {
      const rows = await prisma.episodeTag.findMany({ where: { scopeId, episodeId }, orderBy: { value: 'asc' } });
      return {
        topics: rows.filter((row) => row.kind === 'topic').map((row) => row.value),
        entities: rows.filter((row) => row.kind === 'entity').map((row) => row.value),
      };
    },
  };
}
