/**
 * What the consolidator checks in a model's answer once it is a plan: whether "learned nothing"
 * can be trusted (a weak model's empty answer must not mark the person's words consolidated), and
 * relative dates made absolute before they are written as memories.
 */
import type { Episode } from '../../storage/prisma';
import { looksLikeInjection } from '../../memory/memories/memory-guards';
import { resolveRelativeDates } from '../../shared/relative-dates';
import type { ConsolidationAnswer } from './operations';
import type { Plan } from './plan';

/** A person's turn with at least this many words may hold something worth learning. */
const SUBSTANTIVE_WORDS = 4;

/**
 * Why an answer that learned nothing cannot be trusted to mean "nothing to learn", or undefined
 * when it can. A weak model answers `{}` or cites only what the planner refuses; marking such a
 * batch consolidated would lose the person's words for good. The cheap test: the prompt held a
 * substantive turn of the person's (a few words, not an injection attempt), no memory, entity
 * or link operation survived, and the model either had operations refused or wrote an empty
 * answer without saying `nothing`. Importance scores alone count as "read, nothing learned".
 */
export function answerProblem(answer: ConsolidationAnswer, plan: Plan, episodes: readonly Episode[]): string | undefined {
  const learned =
    plan.create.length +
    plan.reinforce.length +
    plan.update.length +
    plan.contradict.length +
    plan.decay.length +
    plan.connect.length +
    plan.entities.length +
    plan.insights.length;
  if (learned > 0 || (answer.nothing !== undefined && answer.nothing !== false)) return undefined;
  const substantive = episodes.some((e) => e.role === 'user' && !looksLikeInjection(e.content) && e.content.trim().split(/\s+/).length >= SUBSTANTIVE_WORDS);
  if (!substantive) return undefined;
  if (plan.rejected.length > 0) return `every operation was refused (${plan.rejected.length})`;
  if (plan.importance.length === 0 && plan.summaries.length === 0) return 'the answer was empty and did not say there was nothing to learn';
  return undefined;
}

/**
 * The plan with relative dates in what it writes ("appointment tomorrow") made absolute
 * ("appointment on 2026-03-06"), resolved against the local day of the first episode each
 * statement cites, in the scope's time zone: the memory is read long after "tomorrow" passed.
 */
export function withAbsoluteDates(plan: Plan, episodes: readonly Episode[], timeZone: string | null): Plan {
  const byId = new Map(episodes.map((e) => [e.id, e]));
  const resolve = (content: string, sources: readonly string[]) => {
    const at = sources.map((id) => byId.get(id)?.timestamp).find((t) => t !== undefined);
    return at ? resolveRelativeDates(content, { at, timeZone }) : content;
  };
  return {
    ...plan,
    create: plan.create.map((m) => ({ ...m, content: resolve(m.content, m.sourceEpisodeIds) })),
    update: plan.update.map((u) => ({ ...u, content: resolve(u.content, u.sourceEpisodeIds) })),
    contradict: plan.contradict.map((c) => ({ ...c, statement: { ...c.statement, content: resolve(c.statement.content, c.statement.sourceEpisodeIds) } })),
  };
}
