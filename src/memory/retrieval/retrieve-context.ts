/**
 * Context for a reply (seed 000 `retrieveContext`): the memories relevant to the message (hybrid
 * search, confidence at least 0.3), the recent episodes (last 24 hours), and whatever else the
 * caller ranks in (active goals, the agent loop's items), scored and packed into a token budget
 * (default 2,000 tokens, estimated with src/shared/tokens.ts). What did not fit is returned as
 * `dropped`, so the caller can log it or ask for less.
 *
 * Texts go into the prompt through the output filter: memories come from the search, which
 * applies it; recent episodes are read here and shown through {@link showStored}.
 *
 * Putting a memory into a context counts as an access (seed 004 upkeep: importance follows
 * access) but never as reinforcement: only new evidence makes a memory more believed.
 */
import type { Logger } from '../../shared/logger';
import { estimateTokens } from '../../shared/tokens';
import type { PrismaClient } from '../../storage/prisma';
import { formatLocalMinute } from '../digests/digest';
import { showStored } from '../output-filter';
import type { HybridSearch } from './hybrid-search';

export type ContextItemKind = 'memory' | 'episode' | 'goal' | 'other';

export interface ContextItem {
  readonly kind: ContextItemKind;
  readonly id: string;
  /** The text as it goes into the prompt. */
  readonly text: string;
  /** Higher goes in first. */
  readonly score: number;
  readonly tokens: number;
  readonly timestamp?: Date;
}

export interface ContextRequest {
  readonly scopeId: string;
  /** The person's message the reply is for. */
  readonly message: string;
  readonly now?: Date;
  /** Default 2,000 tokens. */
  readonly budgetTokens?: number;
  /** Memories asked of the search (default 10) and their confidence floor (default 0.3). */
  readonly memoryLimit?: number;
  readonly minConfidence?: number;
  /** Recent episodes: how far back (default 24 h) and how many (default 20). */
  readonly recentHours?: number;
  readonly recentLimit?: number;
  /** Episodes already in the prompt (the working context), left out here. */
  readonly excludeEpisodeIds?: readonly string[];
  /** The scope's zone, episodes' times are written in (the reply prompt's "Now" is in it too); default UTC. */
  readonly timeZone?: string | null;
  /**
   * Deep recall (the person asked "do you remember…"): faded memories that share a word with the
   * message are searched too, whatever their confidence, and marked faded in their line.
   */
  readonly includeFaded?: boolean;
  /** More items to rank in (active goals, scheduled tasks, ...). */
  readonly extra?: readonly Omit<ContextItem, 'tokens'>[];
}

export interface RetrievedContext {
  /** What fits, best first. */
  readonly items: ContextItem[];
  readonly dropped: ContextItem[];
  readonly usedTokens: number;
  readonly budgetTokens: number;
  /** Memories included (the agent loop records them so a reply repeating them is not learned again). */
  readonly memoryIds: string[];
  /** Why a part is missing (vector search off, search failed, ...). */
  readonly notes: string[];
}

/** Relative weight of each kind before its own score: memories are distilled, goals steer. */
const KIND_WEIGHT: Record<ContextItemKind, number> = { goal: 1.2, memory: 1, episode: 0.6, other: 0.5 };

/** A memory as a prompt line; a faded one (found by deep recall) says so. */
export function formatMemory(category: string, content: string, confidence: number, faded = false): string {
  return `[${category}, confidence ${confidence.toFixed(2)}${faded ? ', faded' : ''}] ${content}`;
}

/** An episode as a prompt line: its local minute (in `timeZone`, default UTC), who, what. */
export function formatEpisode(role: string, author: string | null, timestamp: Date, content: string, timeZone: string | null = null): string {
  return `${formatLocalMinute(timestamp, timeZone)} ${author ?? role}: ${content}`;
}

/** Greedy packing by score; an item that does not fit is dropped and smaller ones still tried. */
export function packIntoBudget(items: readonly ContextItem[], budget: number): { items: ContextItem[]; dropped: ContextItem[]; used: number } {
  const sorted = [...items].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  const kept: ContextItem[] = [];
  const dropped: ContextItem[] = [];
  let used = 0;
  for (const item of sorted) {
    if (used + item.tokens <= budget) {
      kept.push(item);
      used += item.tokens;
    } else dropped.push(item);
  }
  return { items: kept, dropped, used };
}

export function createContextRetriever(deps: { prisma: PrismaClient; search: HybridSearch; logger: Logger; clock?: () => Date }) {
  const log = deps.logger.child({ component: 'context' });
  const clock = deps.clock ?? (() => new Date());

  return {
    async retrieveContext(request: ContextRequest): Promise<RetrievedContext> {
      const now = request.now ?? clock();
      const budgetTokens = request.budgetTokens ?? 2_000;
      const notes: string[] = [];
      const candidates: ContextItem[] = [];

      if (request.message.trim() !== '') {
        try {
          const { results, notes: searchNotes } = await deps.search.search({
            scopeId: request.scopeId,
            semanticQuery: request.message,
            kinds: ['memory'],
            minConfidence: request.minConfidence ?? 0.3,
            includeFaded: request.includeFaded,
            limit: request.memoryLimit ?? 10,
            now,
          });
          notes.push(...searchNotes);
          const best = results[0]?.score ?? 1;
          for (const r of results) {
            const text = formatMemory(r.category ?? 'fact', r.content, r.confidence ?? 0, r.faded);
            candidates.push({ kind: 'memory', id: r.id, text, score: KIND_WEIGHT.memory * (best > 0 ? r.score / best : 0), tokens: estimateTokens(text), timestamp: r.timestamp });
          }
        } catch (error) {
          log.warn('memory search failed; the context has no memories this time', { scopeId: request.scopeId, error });
          notes.push('memories unavailable for this reply (search failed)');
        }
      }

      const since = new Date(now.getTime() - (request.recentHours ?? 24) * 3_600_000);
      const recent = await deps.prisma.episode.findMany({
        where: { scopeId: request.scopeId, timestamp: { gte: since, lte: now }, id: request.excludeEpisodeIds?.length ? { notIn: [...request.excludeEpisodeIds] } : undefined },
        orderBy: [{ timestamp: 'desc' }, { id: 'desc' }],
        take: request.recentLimit ?? 20,
      });
      const span = Math.max(1, now.getTime() - since.getTime());
      for (const e of recent) {
        const text = formatEpisode(e.role, e.author, e.timestamp, showStored(e.summary ?? e.content), request.timeZone);
        const freshness = 1 - (now.getTime() - e.timestamp.getTime()) / span;
        candidates.push({ kind: 'episode', id: e.id, text, score: KIND_WEIGHT.episode * (0.5 + 0.5 * freshness), tokens: estimateTokens(text), timestamp: e.timestamp });
      }
      for (const x of request.extra ?? []) candidates.push({ ...x, score: KIND_WEIGHT[x.kind] * x.score, tokens: estimateTokens(x.text) });

      const packed = packIntoBudget(candidates, budgetTokens);
      const memoryIds = packed.items.filter((i) => i.kind === 'memory').map((i) => i.id);
      if (memoryIds.length > 0) {
        await deps.prisma.memory.updateMany({ where: { scopeId: request.scopeId, id: { in: memoryIds } }, data: { accessCount: { increment: 1 }, lastAccessedAt: now } });
      }
      return { items: packed.items, dropped: packed.dropped, usedTokens: packed.used, budgetTokens, memoryIds, notes: [...new Set(notes)] };
    },
  };
}

export type ContextRetriever = ReturnType<typeof createContextRetriever>;
