/**
 * The memory domain's service for callers above it (the agent, channels): verbs a person would
 * use — remember, reinforce, revise, recall one, list the open conflicts and the active goals,
 * remember an ended conversation in a capped scope — each in its own transaction, each returning
 * what it wrote.
 * Every write goes through memory-writer.ts, so the rules of memory-guards.ts hold whoever calls
 * (a refused write throws `MemoryRefused`, a ValidationError naming the rule).
 */
import type { LanguageModel } from '../../llm/language-model';
import type { Logger } from '../../shared/logger';
import type { Memory, PrismaClient } from '../../storage/prisma';
import type { VectorIndex } from '../vectors/vector-index';
import { rememberConversation, type CappedResult } from './capped-memory';
import type { Episode } from '../episodes/episode-service';
import { reinforceMemory, reviveMemory, supersedeMemory, writeMemory, type ChangeOrigin, type NewMemory, type WriteResult } from './memory-writer';
import type { Embedder } from '../embeddings/embedder';
import { findNeighbours } from './restatements';
import { openConflicts, type Conflict } from './conflicts';
import { showStoredValue } from '../output-filter';

/** A stored memory, as the domain hands it out. */
export type StoredMemory = Memory;

/** A correction of a memory: the new content (and category), with the evidence for it. */
export interface MemoryRevision {
  readonly content: string;
  readonly category?: string;
  readonly confidence?: number;
  readonly sourceEpisodeIds: readonly string[];
}

export interface MemoryStore {
  /**
   * Stores a new memory of what the person said (its evidence cited); a restatement of a current
   * memory reinforces or revises that one instead, and the result says which.
   */
  remember(memory: NewMemory, origin: ChangeOrigin): Promise<WriteResult>;
  /** New evidence confirms a current memory (+0.05 confidence, revived if it had faded). */
  reinforce(params: { scopeId: string; id: string; sourceEpisodeIds: readonly string[] }, origin: ChangeOrigin): Promise<StoredMemory>;
  /**
   * Deep recall: revives the faded memories among `ids` that were shown because the person asked
   * (memory-writer.ts `reviveMemory`); others are left alone. Returns the ids revived.
   */
  revive(params: { scopeId: string; ids: readonly string[] }, origin: ChangeOrigin): Promise<string[]>;
  /** Replaces a current memory's content; the old version stays as history. */
  revise(params: { scopeId: string; id: string; change: MemoryRevision }, origin: ChangeOrigin): Promise<{ previous: StoredMemory; current: StoredMemory }>;
  /** One memory of the scope (faded and superseded ones too), or null. */
  get(scopeId: string, id: string): Promise<StoredMemory | null>;
  /** The scope's open contradictions (conflicts.ts), texts through the output filter. */
  conflicts(scopeId: string): Promise<Conflict[]>;
  /** The contents of the scope's current goals, most confident first. */
  activeGoals(scopeId: string, limit?: number): Promise<string[]>;
  /**
   * Capped mode (seed 001): the model writes one memory of an ended conversation and the scope
   * is kept at `cap` memories (the model merges or deletes one; FIFO when it fails).
   */
  rememberConversationCapped(
    params: { scopeId: string; episodes: readonly Episode[]; cap: number; llm: LanguageModel },
    origin: ChangeOrigin,
  ): Promise<CappedResult>;
}

/** Goals listed for a reply by default. */
const GOALS_SHOWN = 10;

export function createMemoryStore(deps: { prisma: PrismaClient; index?: VectorIndex; embedder?: Embedder; logger: Logger }): MemoryStore {
  const { prisma } = deps;
  return {
    async remember(memory, origin) {
      // The embedder is async and outside the database: the neighbours are found before the transaction.
      const [neighbours] = memory.neighbours ? [memory.neighbours] : await findNeighbours(deps, memory.scopeId, [memory.content]);
      return prisma.$transaction((tx) => writeMemory(tx, { ...memory, neighbours }, origin));
    },
    reinforce: ({ scopeId, id, sourceEpisodeIds }, origin) => prisma.$transaction((tx) => reinforceMemory(tx, scopeId, id, sourceEpisodeIds, origin)),
    async revive({ scopeId, ids }, origin) {
      if (ids.length === 0) return [];
      const faded = await prisma.memory.findMany({
        where: { scopeId, id: { in: [...ids] }, active: false, validTo: null },
        select: { id: true },
      });
      if (faded.length === 0) return [];
      return prisma.$transaction(async (tx) => {
        const revived: string[] = [];
        for (const { id } of faded) if (await reviveMemory(tx, scopeId, id, origin)) revived.push(id);
        return revived;
      });
    },
    revise: ({ scopeId, id, change }, origin) => prisma.$transaction((tx) => supersedeMemory(tx, scopeId, id, change, origin)),
    get: (scopeId, id) => prisma.memory.findFirst({ where: { scopeId, id } }),
    conflicts: async (scopeId) => showStoredValue(await openConflicts(prisma, scopeId)),
    async activeGoals(scopeId, limit = GOALS_SHOWN) {
      const rows = await prisma.memory.findMany({
        where: { scopeId, category: 'goal', active: true, validTo: null },
        orderBy: [{ confidence: 'desc' }, { createdAt: 'desc' }],
        take: limit,
        select: { content: true },
      });
      return rows.map((r) => r.content);
    },
    rememberConversationCapped: ({ scopeId, episodes, cap, llm }, origin) =>
      rememberConversation({ prisma, llm, index: deps.index, logger: deps.logger }, scopeId, episodes, cap, origin),
  };
}
