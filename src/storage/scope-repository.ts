/**
 * Scopes: the isolation unit. Every other repository takes a scope id and filters by it inside
 * its own queries, so no caller can forget the filter.
 */
import type { PrismaClient, Scope } from './prisma';

export interface ScopeDescriptor {
  /** Stable key, e.g. `telegram:private:123` or `terminal:alice`. */
  readonly key: string;
  readonly channel: string;
  readonly kind?: string;
  readonly title?: string;
  readonly ownerId?: string;
}

export interface ScopeSummary {
  readonly id: string;
  readonly key: string;
  readonly channel: string;
  readonly kind: string;
  readonly title: string | null;
  readonly episodeCount: number;
  readonly memoryCount: number;
  readonly lastMessageAt: Date | null;
  readonly createdAt: Date;
}

export interface ScopeRepository {
  /** Returns the scope with this key, creating it on first use. */
  ensure(scope: ScopeDescriptor): Promise<Scope>;
  findByKey(key: string): Promise<Scope | null>;
  list(): Promise<ScopeSummary[]>;
  /** Records that a message arrived (idle detection for the sleep worker). */
  /**
   * Records that a message arrived (idle detection for the sleep worker): moves the scope's
   * lastMessageAt forward to `at`, never back. A lastMessageAt after `ceiling` (an older version
   * stored any timestamp, year 9999 included) is no time a message had, and is replaced by `at`.
   */
  touch(scopeId: string, at: Date, ceiling?: Date): Promise<void>;
}

export function createScopeRepository(prisma: PrismaClient): ScopeRepository {
  return {
    async ensure(scope) {
      const existing = await prisma.scope.findUnique({ where: { key: scope.key } });
      if (existing) return existing;
      try {
        return await prisma.scope.create({
          data: { key: scope.key, channel: scope.channel, kind: scope.kind ?? 'user', title: scope.title, ownerId: scope.ownerId },
        });
      } catch (error) {
        // Another process created it between our read and write.
        if ((error as { code?: string }).code === 'P2002') return prisma.scope.findUniqueOrThrow({ where: { key: scope.key } });
        throw error;
      }
    },
    findByKey: (key) => prisma.scope.findUnique({ where: { key } }),
    async list() {
      const scopes = await prisma.scope.findMany({
        orderBy: { createdAt: 'asc' },
        include: { _count: { select: { episodes: true, memories: true } } },
      });
      return scopes.map((scope) => ({
        id: scope.id,
        key: scope.key,
        channel: scope.channel,
        kind: scope.kind,
        title: scope.title,
        episodeCount: scope._count.episodes,
        memoryCount: scope._count.memories,
        lastMessageAt: scope.lastMessageAt,
        createdAt: scope.createdAt,
      }));
    },
    async touch(scopeId, at, ceiling) {
      const impossible = ceiling ? [{ lastMessageAt: { gt: ceiling } }] : [];
      await prisma.scope.updateMany({
        where: { id: scopeId, OR: [{ lastMessageAt: null }, { lastMessageAt: { lt: at } }, ...impossible] },
        data: { lastMessageAt: at },
      });
    },
  };
}
