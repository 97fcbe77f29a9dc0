/**
 * The embedding worker's queue, which is the database itself: a row whose `embeddedWith` is neither
 * the configured embedder's name nor its {@link setAsideMark} is pending. Kept apart from the
 * worker so that what "pending", "embedded" and "set aside" mean in rows is written once, and the
 * worker only decides what to do with a batch.
 *
 * A row is marked only in the version that was read (an episode's content hash, a memory's
 * `updatedAt`): a row edited or forgotten meanwhile is not marked and stays pending.
 */
import type { PrismaClient } from '../../storage/prisma';
import type { VectorKind } from '../vectors/vector-index';

/** What `embeddedWith` holds for a row the embedder named `embedderName` could not embed. */
export function setAsideMark(embedderName: string): string {
  return `set-aside:${embedderName}`;
}

/** A row set aside (no text: ids and size only). */
export interface SetAsideRow {
  readonly kind: VectorKind;
  readonly id: string;
  readonly scopeId: string;
}

/** A row waiting for its vector, as read for one batch. */
export interface PendingRow {
  readonly id: string;
  readonly scopeId: string;
  readonly content: string;
  readonly kind: VectorKind;
  /** What identifies this version of the row (episode content hash, memory updatedAt). */
  readonly version: string | Date;
}

/** The pending rows of the database, read and marked for one embedder. */
export interface EmbeddingQueue {
  /** The next rows waiting, episodes first, at most `batchSize`. */
  next(): Promise<PendingRow[]>;
  /** Rows still waiting for a vector. */
  pending(): Promise<number>;
  /** Rows set aside for this embedder: how many, and the first `limit`. */
  setAside(limit: number): Promise<{ count: number; rows: SetAsideRow[] }>;
  /** The ids of `rows` whose stored version is still the one that was read. */
  stillCurrent(rows: readonly PendingRow[]): Promise<Set<string>>;
  /** Marks the rows embedded, in one transaction; per row, whether its version was still there to mark. */
  markEmbedded(rows: readonly PendingRow[]): Promise<boolean[]>;
  /** Marks one row set aside; whether its version was still there to mark. */
  markSetAside(row: PendingRow): Promise<boolean>;
}

/** A stable key of one version of a row (the same row edited is another key). */
export function versionKey(row: PendingRow): string {
  return `${row.kind}:${row.id}:${versionOf(row)}`;
}

function versionOf(row: PendingRow): string {
  return row.version instanceof Date ? row.version.toISOString() : row.version;
}

/** The queue of `embedderName`, read `batchSize` rows at a time. */
export function createEmbeddingQueue(deps: { prisma: PrismaClient; embedderName: string; batchSize: number }): EmbeddingQueue {
  const { prisma, embedderName, batchSize } = deps;
  const setAsideWith = setAsideMark(embedderName);
  const pendingWhere = { OR: [{ embeddedWith: null }, { embeddedWith: { notIn: [embedderName, setAsideWith] } }] };
  const setAsideWhere = { embeddedWith: setAsideWith };

  /** The update marking this version of `row` with `embeddedWith` (nothing when the row changed). */
  function mark(row: PendingRow, embeddedWith: string) {
    return row.kind === 'episode'
      ? prisma.episode.updateMany({ where: { id: row.id, contentHash: row.version as string }, data: { embeddedWith } })
      : // updatedAt is given as it was: being embedded is bookkeeping, not a change to the memory
        // (Prisma would otherwise move it, and an export would differ after every embedding).
        prisma.memory.updateMany({ where: { id: row.id, updatedAt: row.version as Date }, data: { embeddedWith, updatedAt: row.version as Date } });
  }

  return {
    async next() {
      const episodes = await prisma.episode.findMany({
        where: pendingWhere,
        select: { id: true, scopeId: true, content: true, author: true, contentHash: true },
        orderBy: { id: 'asc' },
        take: batchSize,
      });
      // Embedded as "author: content", like the full-text index, so the speaker is part of the meaning.
      const rows: PendingRow[] = episodes.map((e) => ({
        id: e.id,
        scopeId: e.scopeId,
        content: e.author ? `${e.author}: ${e.content}` : e.content,
        kind: 'episode',
        version: e.contentHash,
      }));
      if (rows.length < batchSize) {
        const memories = await prisma.memory.findMany({
          where: pendingWhere,
          select: { id: true, scopeId: true, content: true, updatedAt: true },
          orderBy: { id: 'asc' },
          take: batchSize - rows.length,
        });
        rows.push(...memories.map((m) => ({ id: m.id, scopeId: m.scopeId, content: m.content, kind: 'memory' as const, version: m.updatedAt })));
      }
      return rows;
    },

    async pending() {
      const [episodes, memories] = await Promise.all([prisma.episode.count({ where: pendingWhere }), prisma.memory.count({ where: pendingWhere })]);
      return episodes + memories;
    },

    async setAside(limit) {
      const select = { id: true, scopeId: true } as const;
      const [episodes, memories, episodeRows, memoryRows] = await Promise.all([
        prisma.episode.count({ where: setAsideWhere }),
        prisma.memory.count({ where: setAsideWhere }),
        prisma.episode.findMany({ where: setAsideWhere, select, orderBy: { id: 'asc' }, take: limit }),
        prisma.memory.findMany({ where: setAsideWhere, select, orderBy: { id: 'asc' }, take: limit }),
      ]);
      const rows = [...episodeRows.map((r) => ({ kind: 'episode' as const, ...r })), ...memoryRows.map((r) => ({ kind: 'memory' as const, ...r }))];
      return { count: episodes + memories, rows: rows.slice(0, limit) };
    },

    async stillCurrent(rows) {
      const ids = rows.map((row) => row.id);
      const [episodes, memories] = await Promise.all([
        prisma.episode.findMany({ where: { id: { in: ids } }, select: { id: true, contentHash: true } }),
        prisma.memory.findMany({ where: { id: { in: ids } }, select: { id: true, updatedAt: true } }),
      ]);
      const versions = new Map<string, string>([
        ...episodes.map((e) => [e.id, e.contentHash] as [string, string]),
        ...memories.map((m) => [m.id, m.updatedAt.toISOString()] as [string, string]),
      ]);
      return new Set(rows.filter((row) => versions.get(row.id) === versionOf(row)).map((row) => row.id));
    },

    async markEmbedded(rows) {
      const marked = await prisma.$transaction(rows.map((row) => mark(row, embedderName)));
      return marked.map((result) => result.count > 0);
    },

    async markSetAside(row) {
      return (await mark(row, setAsideWith)).count > 0;
    },
  };
}
