/**
 * Conversations and their working memory (seed 000 layer 1): each scope's open `Conversation`
 * row holds what a restart needs to continue where it was: which turns are still held in full,
 * the running summary of the older ones, the active goals last shown, and the compaction
 * bookkeeping (cycle counter, last compaction, a flush that was stored but not yet followed by
 * its summary).
 *
 * The turns themselves are episodes; the state holds their ids only. Nothing here calls a model.
 * The one write that spans memories and the working state, the compaction flush
 * ({@link ConversationStore.recordFlush}), is one transaction here, so the agent never holds one.
 */
import { z } from 'zod';
import type { Logger } from '../../shared/logger';
import type { Episode, Prisma, PrismaClient } from '../../storage/prisma';
import { createMemory, reinforceMemory, type ChangeOrigin } from '../memories/memory-writer';

type Db = PrismaClient | Prisma.TransactionClient;

const pendingSchema = z.object({
  /** The cycle this flush belongs to (completed cycles + 1). */
  cycle: z.number().int(),
  /** Turns flushed and about to be summarized, oldest first. */
  turnIds: z.array(z.string()),
  flushedAt: z.string(),
  memoryIds: z.array(z.string()).default([]),
});

const stateSchema = z.object({
  recentTurnIds: z.array(z.string()).default([]),
  goals: z.array(z.string()).default([]),
  compaction: z
    .object({
      /** Completed cycles (flush, then summary). */
      cycle: z.number().int().min(0).default(0),
      lastAt: z.string().nullable().default(null),
      lastAttemptAt: z.string().nullable().default(null),
      lastFailure: z.string().nullable().default(null),
      /** Turns compacted so far, in all cycles. */
      compactedTurns: z.number().int().min(0).default(0),
      pending: pendingSchema.nullable().default(null),
    })
    .prefault({}),
  /**
   * Turn number of the newest turn the state knows; turns of the conversation stored after it
   * (a crash between storing a message and saving this state) are picked up on the next read.
   */
  lastTurn: z.number().int().default(-1),
  /** Estimated tokens of the working context after the last reply (for the idle check). */
  lastContextTokens: z.number().int().min(0).default(0),
});

/** The persisted working state (the `Conversation.state` document). */
export type WorkingState = z.infer<typeof stateSchema>;
export type PendingFlush = z.infer<typeof pendingSchema>;

/** One scope's working memory: its open conversation and state. */
export interface WorkingMemory {
  readonly conversationId: string;
  readonly scopeId: string;
  readonly startedAt: Date;
  readonly lastActivityAt: Date;
  /** Running summary of the turns compacted out (null before the first compaction). */
  readonly summary: string | null;
  readonly state: WorkingState;
}

/** An open conversation nobody has written in for a while. */
export interface IdleConversation {
  readonly conversationId: string;
  readonly scopeId: string;
  readonly scopeKey: string;
  readonly lastActivityAt: Date;
}

/** A durable fact the compaction flush found, with the person's turns it came from. */
export interface FlushedFact {
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  /** The person's turns (episode ids) that state it. */
  readonly evidence: readonly string[];
}

export interface ConversationStore {
  /** The scope's open conversation, or null. */
  find(scopeId: string): Promise<WorkingMemory | null>;
  /** The scope's open conversation, started now when there is none. */
  open(scopeId: string, now: Date): Promise<WorkingMemory>;
  /** Writes summary, state and activity time. */
  save(memory: WorkingMemory): Promise<void>;
  /**
   * The compaction flush, in one transaction: each fact becomes a memory (stated by the person),
   * or reinforces the current memory with the same text, and `memory` (whose state records the
   * pending flush) is saved with the ids written in `state.compaction.pending.memoryIds`. Every
   * write passes the memory rules (memory-guards.ts); one refused rolls the whole flush back.
   * Returns the ids written.
   */
  recordFlush(params: { memory: WorkingMemory; facts: readonly FlushedFact[]; origin: ChangeOrigin }): Promise<string[]>;
  /** The conversation's last `limit` turns, oldest first. */
  lastTurns(memory: WorkingMemory, limit: number): Promise<Episode[]>;
  /** Which of `episodeIds` are turns of this conversation. */
  turnsAmong(memory: WorkingMemory, episodeIds: readonly string[]): Promise<Set<string>>;
  /** The turns held in full, oldest first (ids of other scopes are never found). */
  recentTurns(memory: WorkingMemory): Promise<Episode[]>;
  /** Ends the conversation; its summary stays on the row, the working state is dropped. */
  end(memory: WorkingMemory, reason: string, now: Date): Promise<void>;
  /** Open conversations without activity since `before`. */
  idleSince(before: Date, limit?: number): Promise<IdleConversation[]>;
}

export function emptyState(): WorkingState {
  return stateSchema.parse({});
}

async function saveState(db: Db, memory: WorkingMemory): Promise<void> {
  await db.conversation.updateMany({
    where: { id: memory.conversationId, scopeId: memory.scopeId },
    data: { summary: memory.summary, state: memory.state as unknown as Prisma.InputJsonObject, lastActivityAt: memory.lastActivityAt },
  });
}

function toMemory(
  row: { id: string; scopeId: string; startedAt: Date; lastActivityAt: Date; summary: string | null; state: unknown },
  log: Logger,
): WorkingMemory {
  const parsed = stateSchema.safeParse(row.state ?? {});
  if (!parsed.success)
    log.warn('working state of a conversation is unreadable; starting from its summary alone', { conversationId: row.id, error: parsed.error.message });
  return {
    conversationId: row.id,
    scopeId: row.scopeId,
    startedAt: row.startedAt,
    lastActivityAt: row.lastActivityAt,
    summary: row.summary,
    state: parsed.success ? parsed.data : emptyState(),
  };
}

function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

export function createConversationStore(deps: { prisma: PrismaClient; logger: Logger }): ConversationStore {
  const { prisma, logger } = deps;
  const log = logger.child({ component: 'working-memory' });

  async function find(scopeId: string): Promise<WorkingMemory | null> {
    const row = await prisma.conversation.findFirst({ where: { scopeId, status: 'open' }, orderBy: [{ lastActivityAt: 'desc' }, { id: 'desc' }] });
    return row ? toMemory(row, log) : null;
  }

  return {
    find,
    async open(scopeId, now) {
      const existing = await find(scopeId);
      if (existing) return existing;
      const row = await prisma.conversation.create({
        data: { scopeId, status: 'open', startedAt: now, lastActivityAt: now, state: emptyState() as unknown as Prisma.InputJsonObject },
      });
      return toMemory(row, log);
    },
    save: (memory) => saveState(prisma, memory),
    async recordFlush({ memory, facts, origin }) {
      const existing =
        facts.length === 0
          ? []
          : await prisma.memory.findMany({
              where: { scopeId: memory.scopeId, active: true, validTo: null, content: { in: facts.map((f) => f.content) } },
              select: { id: true, content: true },
            });
      return prisma.$transaction(async (tx) => {
        const ids: string[] = [];
        for (const fact of facts) {
          const known = existing.find((m) => normalized(m.content) === normalized(fact.content));
          const stored = known
            ? await reinforceMemory(tx, memory.scopeId, known.id, fact.evidence, origin)
            : await createMemory(
                tx,
                {
                  scopeId: memory.scopeId,
                  category: fact.category,
                  content: fact.content,
                  confidence: fact.confidence,
                  sourceType: 'stated',
                  sourceEpisodeIds: fact.evidence,
                },
                origin,
              );
          ids.push(stored.id);
        }
        const pending = memory.state.compaction.pending;
        await saveState(
          tx,
          pending ? { ...memory, state: { ...memory.state, compaction: { ...memory.state.compaction, pending: { ...pending, memoryIds: ids } } } } : memory,
        );
        return ids;
      });
    },
    async lastTurns(memory, limit) {
      const rows = await prisma.episode.findMany({
        where: { scopeId: memory.scopeId, conversationId: memory.conversationId },
        orderBy: [{ turn: 'desc' }],
        take: limit,
      });
      return rows.reverse();
    },
    async turnsAmong(memory, episodeIds) {
      if (episodeIds.length === 0) return new Set();
      const rows = await prisma.episode.findMany({
        where: { scopeId: memory.scopeId, conversationId: memory.conversationId, id: { in: [...episodeIds] } },
        select: { id: true },
      });
      return new Set(rows.map((e) => e.id));
    },
    async recentTurns(memory) {
      const ids = memory.state.recentTurnIds;
      const rows = await prisma.episode.findMany({
        where: { scopeId: memory.scopeId, OR: [{ id: { in: ids } }, { conversationId: memory.conversationId, turn: { gt: memory.state.lastTurn } }] },
      });
      const byId = new Map(rows.map((r) => [r.id, r]));
      const known = new Set(ids);
      const later = rows.filter((r) => !known.has(r.id) && r.conversationId === memory.conversationId && (r.turn ?? -1) > memory.state.lastTurn);
      later.sort((a, b) => (a.turn ?? 0) - (b.turn ?? 0));
      return [...ids.map((id) => byId.get(id)).filter((e): e is Episode => e !== undefined), ...later];
    },
    async end(memory, reason, now) {
      await prisma.conversation.updateMany({
        where: { id: memory.conversationId, scopeId: memory.scopeId, status: 'open' },
        data: {
          status: 'ended',
          endedAt: now,
          endReason: reason,
          summary: memory.summary,
          state: { ended: true, compaction: memory.state.compaction } as unknown as Prisma.InputJsonObject,
        },
      });
    },
    async idleSince(before, limit = 100) {
      const rows = await prisma.conversation.findMany({
        where: { status: 'open', lastActivityAt: { lt: before } },
        orderBy: { lastActivityAt: 'asc' },
        take: limit,
        include: { scope: { select: { key: true } } },
      });
      return rows.map((r) => ({ conversationId: r.id, scopeId: r.scopeId, scopeKey: r.scope.key, lastActivityAt: r.lastActivityAt }));
    },
  };
}
