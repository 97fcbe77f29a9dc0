/**
 * Context for a reply: everything the scope's person said that bears on the message, found by the
 * hybrid search over the scope's episodes AND memories in its knowledge-first order (memories
 * with confidence at least 0.3; turns with their neighbours' relevance, so a neighbouring turn
 * comes along when the ranking puts it there), then the recent episodes (last 24 hours) the
 * search did not find, and whatever else the caller ranks in (active goals, the agent loop's
 * items), packed by score into a token budget (default 2,000 tokens, estimated with
 * src/shared/tokens.ts). Without it a fact told three days ago reached the model only if it
 * chose to call memory_search.
 *
 * Budget rules: a memory and the episodes it was learned from never both spend it (the first in
 * the ranking goes in, usually the memory); turns the caller already sends are left out
 * (`excludeEpisodeIds`). What did not fit is returned as `dropped`, so the caller can log it.
 *
 * Texts go into the prompt through the output filter: what the search found comes from the
 * search, which applies it (`core.ts`), and is not filtered twice; the recent episodes read here
 * are shown through {@link showStored}.
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

/**
 * Relative weight of each kind before its own score: goals steer; memories and the turns the
 * search found share one ranking (knowledge-first already puts a memory above its evidence), so
 * they weigh the same; a recent turn the search did not find comes after most that it did.
 */
const KIND_WEIGHT = { goal: 1.2, memory: 1, found: 1, episode: 0.4, other: 0.5 } as const;

/**
 * Tokens of a typical turn as a context line (a LoCoMo turn with its time and author is ~35): the
 * search is asked for about as many results as the budget holds, so it can be filled.
 */
const TOKENS_PER_RESULT = 30;
const MAX_RESULTS = 200;

/** How many results a context of `budgetTokens` asks of the search (at least 10, at most 200). */
export function searchLimitFor(budgetTokens: number): number {
  return Math.max(10, Math.min(MAX_RESULTS, Math.ceil(budgetTokens / TOKENS_PER_RESULT)));
}

/** A memory as a prompt line; a faded one (found by deep recall) says so. */
export function formatMemory(category: string, content: string, confidence: number, faded = false): string {
  return `[${category}, confidence ${confidence.toFixed(2)}${faded ? ', faded' : ''}] ${content}`;
}

/** An episode as a prompt line: its local minute (in `timeZone`, default UTC), who, what. */
export function formatEpisode(role: string, author: string | null, timestamp: Date, content: string, timeZone: string | null = null): string {
  return `${formatLocalMinute(timestamp, timeZone)} ${author ?? role}: ${content}`;
}

/**
 * Greedy packing by score; an item that does not fit is dropped and smaller ones still tried.
 * `sourcesOf` (memory id -> the episodes it was learned from) keeps a memory and its evidence
 * from both spending budget: whichever ranks first goes in and the other is dropped.
 */
export function packIntoBudget(
  items: readonly ContextItem[],
  budget: number,
  sourcesOf: ReadonlyMap<string, readonly string[]> = new Map(),
): { items: ContextItem[]; dropped: ContextItem[]; used: number } {
  const sorted = [...items].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  const kept: ContextItem[] = [];
  const dropped: ContextItem[] = [];
  /** Ids whose counterpart (a memory, or an episode it was learned from) is in already. */
  const covered = new Set<string>();
  let used = 0;
  for (const item of sorted) {
    if (covered.has(item.id)) {
      dropped.push(item);
      continue;
    }
    if (used + item.tokens <= budget) {
      if (item.kind === 'memory') for (const id of sourcesOf.get(item.id) ?? []) covered.add(id);
      if (item.kind === 'episode') for (const [memoryId, sources] of sourcesOf) if (sources.includes(item.id)) covered.add(memoryId);
      kept.push(item);
      used += item.tokens;
    } else dropped.push(item);
  }
  return { items: kept, dropped, used };
}

/**
 * The retriever. `search` must be the domain's search, whose results come through the output
 * filter already (`core.ts`): their texts go into the prompt as they are.
 */
export function createContextRetriever(deps: { prisma: PrismaClient; search: HybridSearch; logger: Logger; clock?: () => Date }) {
  const log = deps.logger.child({ component: 'context' });
  const clock = deps.clock ?? (() => new Date());

  return {
    async retrieveContext(request: ContextRequest): Promise<RetrievedContext> {
      const now = request.now ?? clock();
      const budgetTokens = request.budgetTokens ?? 2_000;
      const notes: string[] = [];
      const candidates: ContextItem[] = [];

      // Everything said in the scope is searched: its episodes and its memories, in the hybrid
      // search's knowledge-first order. Turns the prompt already holds are left out before ranking.
      const excluded = new Set(request.excludeEpisodeIds ?? []);
      /** Episodes a shown memory was learned from: the memory says it, they need no budget of their own. */
      const sourcesOf = new Map<string, readonly string[]>();
      if (request.message.trim() !== '') {
        try {
          const { results, notes: searchNotes } = await deps.search.search({
            scopeId: request.scopeId,
            semanticQuery: request.message,
            kinds: ['episode', 'memory'],
            minConfidence: request.minConfidence ?? 0.3,
            includeFaded: request.includeFaded,
            limit: request.memoryLimit ?? searchLimitFor(budgetTokens),
            now,
          });
          notes.push(...searchNotes);
          const shown = results.filter((r) => !(r.kind === 'episode' && excluded.has(r.id)));
          const best = shown[0]?.score ?? 1;
          for (const r of shown) {
            const relative = best > 0 ? Math.max(0, r.score) / best : 0;
            if (r.kind === 'memory') {
              const text = formatMemory(r.category ?? 'fact', r.content, r.confidence ?? 0, r.faded);
              sourcesOf.set(
                r.id,
                (r.sourceEpisodes ?? []).map((src) => src.id),
              );
              candidates.push({ kind: 'memory', id: r.id, text, score: KIND_WEIGHT.memory * relative, tokens: estimateTokens(text), timestamp: r.timestamp });
            } else {
              const text = formatEpisode(r.role ?? 'user', r.author ?? null, r.timestamp, r.content, request.timeZone);
              candidates.push({ kind: 'episode', id: r.id, text, score: KIND_WEIGHT.found * relative, tokens: estimateTokens(text), timestamp: r.timestamp });
            }
          }
        } catch (error) {
          log.warn('context search failed; the context has only recent turns this time', { scopeId: request.scopeId, error });
          notes.push('memories unavailable for this reply (search failed)');
        }
      }

      const since = new Date(now.getTime() - (request.recentHours ?? 24) * 3_600_000);
      const recent = await deps.prisma.episode.findMany({
        where: {
          scopeId: request.scopeId,
          timestamp: { gte: since, lte: now },
          id: request.excludeEpisodeIds?.length ? { notIn: [...request.excludeEpisodeIds] } : undefined,
        },
        orderBy: [{ timestamp: 'desc' }, { id: 'desc' }],
        take: request.recentLimit ?? 20,
      });
      const span = Math.max(1, now.getTime() - since.getTime());
      const found = new Set(candidates.map((c) => c.id));
      for (const e of recent) {
        if (found.has(e.id)) continue;
        const text = formatEpisode(e.role, e.author, e.timestamp, showStored(e.summary ?? e.content), request.timeZone);
        const freshness = 1 - (now.getTime() - e.timestamp.getTime()) / span;
        candidates.push({
          kind: 'episode',
          id: e.id,
          text,
          score: KIND_WEIGHT.episode * (0.5 + 0.5 * freshness),
          tokens: estimateTokens(text),
          timestamp: e.timestamp,
        });
      }
      for (const x of request.extra ?? []) candidates.push({ ...x, score: KIND_WEIGHT[x.kind] * x.score, tokens: estimateTokens(x.text) });

      const packed = packIntoBudget(candidates, budgetTokens, sourcesOf);
      const memoryIds = packed.items.filter((i) => i.kind === 'memory').map((i) => i.id);
      if (memoryIds.length > 0) {
        await deps.prisma.memory.updateMany({
          where: { scopeId: request.scopeId, id: { in: memoryIds } },
          data: { accessCount: { increment: 1 }, lastAccessedAt: now },
        });
      }
      return { items: packed.items, dropped: packed.dropped, usedTokens: packed.used, budgetTokens, memoryIds, notes: [...new Set(notes)] };
    },
  };
}

export type ContextRetriever = ReturnType<typeof createContextRetriever>;
