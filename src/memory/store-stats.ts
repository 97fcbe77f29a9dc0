/**
 * What operators read about the store as a whole: whether the database answers, whether the
 * full-text index's sync triggers are in place, and the counts the metrics endpoint reports.
 * Counts are read at call time, so they survive restarts and include other processes' work.
 */
import type { DatabaseProvider, PrismaClient } from '../storage/prisma';

export interface StoreCounts {
  readonly memoriesCreated: number;
  readonly memoriesByState: ReadonlyArray<{ active: boolean; count: number }>;
  readonly sleepRuns: ReadonlyArray<{ kind: string; status: string; count: number }>;
  /** `cacheRead`/`cacheWrite` are part of `input`: the prompt-cache share, priced apart. */
  readonly llmTokens: { readonly input: number; readonly output: number; readonly cacheRead: number; readonly cacheWrite: number };
  readonly llmCalls: ReadonlyArray<{ status: string; count: number }>;
  readonly replies: number;
  readonly repliesWithMemories: number;
  readonly episodes: number;
  readonly compactionSteps: ReadonlyArray<{ purpose: string; status: string; count: number }>;
}

export interface StoreStats {
  /** The migrations this process applied when it opened the database (empty when up to date). */
  readonly migrationsAppliedAtOpen: readonly string[];
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  /** The names of the triggers present in the database. */
  triggers(): Promise<string[]>;
  /** Whether full-text search folds accents ("creme" finds "crème"): always on SQLite; on PostgreSQL with the unaccent extension. */
  foldsAccents(): Promise<boolean>;
  counts(): Promise<StoreCounts>;
}

export function createStoreStats(prisma: PrismaClient, provider: DatabaseProvider, appliedMigrations: readonly string[] = []): StoreStats {
  return {
    migrationsAppliedAtOpen: appliedMigrations,
    async ping() {
      try {
        await prisma.$queryRawUnsafe('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async triggers() {
      const rows =
        provider === 'sqlite'
          ? await prisma.$queryRaw<Array<{ name: string }>>`SELECT name FROM sqlite_master WHERE type = 'trigger'`
          : await prisma.$queryRaw<Array<{ name: string }>>`SELECT tgname AS name FROM pg_trigger WHERE NOT tgisinternal`;
      return rows.map((row) => row.name);
    },
    async foldsAccents() {
      if (provider === 'sqlite') return true;
      const rows = await prisma.$queryRaw<Array<{ folded: string }>>`SELECT "nocturne_search_fold"('crème') AS folded`;
      return rows[0]?.folded === 'creme';
    },
    async counts() {
      const [created, memories, runs, tokens, calls, replies, episodes, compactions] = await Promise.all([
        prisma.auditEvent.count({ where: { action: 'create', subjectType: 'memory' } }),
        prisma.memory.groupBy({ by: ['active'], _count: { _all: true } }),
        prisma.sleepRun.groupBy({ by: ['kind', 'status'], _count: { _all: true } }),
        prisma.llmCall.aggregate({ _sum: { inputTokens: true, outputTokens: true, cacheReadTokens: true, cacheWriteTokens: true } }),
        prisma.llmCall.groupBy({ by: ['status'], _count: { _all: true } }),
        prisma.episode.count({ where: { role: 'agent' } }),
        prisma.episode.count(),
        // A compaction cycle is a flush call, then a summary call (src/agent/compaction.ts).
        prisma.llmCall.groupBy({
          by: ['purpose', 'status'],
          where: { purpose: { in: ['compaction-flush', 'compaction-summary'] } },
          _count: { _all: true },
        }),
      ]);
      // Replies whose episode lists the memories it was shown (metadata.injectedMemoryIds, an
      // array; every reply has the key, so only a non-empty one counts). Prisma's JSON filters do
      // not reach into arrays (`string_contains` matched nothing on PostgreSQL and failed on SQLite,
      // both read as 0): ask each engine's JSON functions.
      const injected =
        provider === 'sqlite'
          ? await prisma.$queryRaw<
              Array<{ n: bigint | number }>
            >`SELECT COUNT(*) AS n FROM "Episode" WHERE "role" = 'agent' AND json_valid("metadata") AND json_type("metadata", '$.injectedMemoryIds') = 'array' AND json_array_length("metadata", '$.injectedMemoryIds') > 0`
          : await prisma.$queryRaw<
              Array<{ n: bigint | number }>
            >`SELECT COUNT(*) AS n FROM "Episode" WHERE "role" = 'agent' AND CASE WHEN jsonb_typeof("metadata" -> 'injectedMemoryIds') = 'array' THEN jsonb_array_length("metadata" -> 'injectedMemoryIds') > 0 ELSE false END`;
      const repliesWithMemories = Number(injected[0]?.n ?? 0);
      return {
        memoriesCreated: created,
        memoriesByState: memories.map((m) => ({ active: m.active, count: m._count._all })),
        sleepRuns: runs.map((r) => ({ kind: r.kind, status: r.status, count: r._count._all })),
        llmTokens: {
          input: tokens._sum.inputTokens ?? 0,
          output: tokens._sum.outputTokens ?? 0,
          cacheRead: tokens._sum.cacheReadTokens ?? 0,
          cacheWrite: tokens._sum.cacheWriteTokens ?? 0,
        },
        llmCalls: calls.map((c) => ({ status: c.status, count: c._count._all })),
        replies,
        repliesWithMemories,
        episodes,
        compactionSteps: compactions.map((c) => ({ purpose: c.purpose, status: c.status, count: c._count._all })),
      };
    },
  };
}
