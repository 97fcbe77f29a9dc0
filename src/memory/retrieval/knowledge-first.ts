/**
 * Knowledge before its evidence: the rules that order a hybrid search's memories against the
 * episodes they were learned from.
 *
 * Episodes get parts memories never have (neighbouring turns, passage, conversation), so left to
 * their raw scores the turn "I work as a pediatric nurse" outranks the memory "Dana is a charge
 * nurse" it was long since corrected by. Three rules, applied after scoring:
 *
 * - A current memory is lifted just above the best matching episode it was learned from, counting
 *   the sources of its earlier (superseded) versions too: the knowledge comes first and its
 *   evidence folds right under it. A memory whose sources do not match keeps its own score.
 * - A superseded version ranks just below its current version when both are results.
 * - An episode whose text was forgotten (the placeholder left by forgetting) is never a result.
 *
 * A scope without memories (a conversation benchmark) is left exactly as scored.
 */
import type { PrismaClient } from '../../storage/prisma';
import { FORGOTTEN_TEXT } from '../forget/redact-derived';
import type { Scored } from './search-scoring';

/** How far above its best source a memory is put (and a superseded version below its current). */
export const FOLD_MARGIN = 1e-3;
/** Superseded versions followed back from a current memory. */
const MAX_VERSION_DEPTH = 8;

/** Whether an episode still says something (its text was not forgotten). */
export function isForgottenEpisode(content: string): boolean {
  return content === FORGOTTEN_TEXT;
}

/** The source episodes of each memory and all its earlier versions. */
async function lineageSources(prisma: PrismaClient, scopeId: string, memories: readonly Scored[]): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  const rootOf = new Map<string, string>();
  for (const s of memories) {
    out.set(s.id, new Set(s.memory!.sources.map((src) => src.episodeId)));
    rootOf.set(s.id, s.id);
  }
  let frontier = [...rootOf.keys()];
  for (let depth = 0; depth < MAX_VERSION_DEPTH && frontier.length > 0; depth++) {
    const older = await prisma.memory.findMany({
      where: { scopeId, supersededById: { in: frontier } },
      select: { id: true, supersededById: true, sources: { select: { episodeId: true } } },
    });
    frontier = [];
    for (const m of older) {
      const root = rootOf.get(m.supersededById!)!;
      if (rootOf.has(m.id)) continue;
      rootOf.set(m.id, root);
      for (const src of m.sources) out.get(root)!.add(src.episodeId);
      frontier.push(m.id);
    }
  }
  return out;
}

/**
 * Applies the rules above to the scored candidates of one search (mutating their scores) and
 * returns those that may be shown.
 */
export async function rankKnowledgeFirst(prisma: PrismaClient, scopeId: string, scored: readonly Scored[]): Promise<Scored[]> {
  const shown = scored.filter((s) => !(s.episode && isForgottenEpisode(s.episode.content)));
  const current = shown.filter((s) => s.memory && s.memory.validTo === null && s.memory.active);
  if (current.length === 0 && !shown.some((s) => s.memory)) return shown;
  const episodes = new Map(shown.filter((s) => s.episode).map((s) => [s.id, s]));
  const sources = await lineageSources(prisma, scopeId, current);
  for (const m of current) {
    let best = -Infinity;
    for (const id of sources.get(m.id) ?? []) best = Math.max(best, episodes.get(id)?.base ?? -Infinity);
    if (best >= m.base) {
      m.base = best + FOLD_MARGIN;
      m.parts = { ...m.parts, folded: 1 };
    }
  }
  const byId = new Map(shown.filter((s) => s.memory).map((s) => [s.id, s]));
  for (const s of shown) {
    const newer = s.memory?.supersededById ? byId.get(s.memory.supersededById) : undefined;
    if (newer && s.base >= newer.base) s.base = newer.base - FOLD_MARGIN;
  }
  return shown;
}
