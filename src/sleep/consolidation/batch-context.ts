/**
 * What a consolidation prompt is read with besides its episodes: the batch's time zone, the
 * memories relevant to the prompt (retrieved, not all), and the turns relayed notes name.
 */
import type { HybridSearch } from '../../memory/retrieval/hybrid-search';
import { relayedFromOf } from '../../memory/memories/memory-guards';
import { scopeTimeZone } from '../../memory/scopes/scope-policy';
import type { Episode, Memory, PrismaClient } from '../../storage/prisma';
import type { PromptEpisodeGroup } from './prompt';

/** The reads one batch's prompts need. */
export interface BatchContext {
  timeZoneOf(scopeId: string): Promise<{ timeZone: string; group: boolean }>;
  relevantMemories(scopeId: string, groups: readonly PromptEpisodeGroup[], now: Date): Promise<Memory[]>;
  relayedTurns(scopeId: string, episodes: readonly Episode[]): Promise<Map<string, Episode>>;
}

export function createBatchContext(deps: {
  readonly prisma: PrismaClient;
  readonly search: HybridSearch;
  /** Relevant memories shown per prompt. */
  readonly memoriesPerPrompt: number;
  /** The zone episode times are shown in for scopes that name none (TZ); absent: UTC. */
  readonly defaultTimeZone?: string;
}): BatchContext {
  const { prisma, memoriesPerPrompt } = deps;
  return {
    /**
     * The zone of a batch (the scope policy's rule: the scope's own, else the default), read once:
     * every prompt of the batch shows episode times in it and every relative date is resolved in
     * it, so a line never says one day while the memory learned from it says another.
     */
    async timeZoneOf(scopeId) {
      const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { timezone: true, kind: true } });
      // A group's prompts name each line's speaker (prompt.ts GROUP_SPEAKERS_NOTE).
      return { timeZone: scopeTimeZone({ timezone: scope?.timezone ?? null }, deps.defaultTimeZone), group: scope?.kind === 'group' };
    },

    /**
     * Memories relevant to a prompt's episodes: first those already learned from these very
     * episodes (a message the person edited is read again, and what was learned from its old text
     * must be there to update), then a search per group with the person's words.
     */
    async relevantMemories(scopeId, groups, now) {
      const episodeIds = groups.flatMap((g) => g.episodes.map((e) => e.id));
      const learned = await prisma.memorySource.findMany({ where: { scopeId, episodeId: { in: episodeIds } }, select: { memoryId: true } });
      const ids = new Set<string>(learned.map((s) => s.memoryId));
      const perGroup = Math.max(5, Math.ceil(memoriesPerPrompt / groups.length));
      for (const group of groups) {
        const text = group.episodes
          .filter((e) => e.role === 'user')
          .map((e) => e.content)
          .join('\n')
          .slice(0, 2_000);
        if (text.trim() === '') continue;
        const { results } = await deps.search.search({ scopeId, semanticQuery: text, kinds: ['memory'], includeInactive: true, limit: perGroup * 2, now });
        for (const r of results) if (ids.size < memoriesPerPrompt * 2) ids.add(r.id);
      }
      if (ids.size === 0) return [];
      const rows = await prisma.memory.findMany({ where: { scopeId, id: { in: [...ids] }, validTo: null } });
      const order = [...ids];
      return rows.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id)).slice(0, memoriesPerPrompt);
    },

    /** The person's turns that relayed notes among `episodes` name (the evidence rule checks them). */
    async relayedTurns(scopeId, episodes) {
      const ids = episodes.map((e) => relayedFromOf(e)).filter((id): id is string => id !== undefined);
      if (ids.length === 0) return new Map();
      const rows = await prisma.episode.findMany({ where: { scopeId, id: { in: ids } } });
      return new Map(rows.map((r) => [r.id, r]));
    },
  };
}
