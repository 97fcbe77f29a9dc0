/**
 * The operations of an answer about the episodes it was shown, planned: importance scores with
 * what each episode is about (its metadata), summaries, and entity observations. A message that
 * tries to instruct the memory system was withheld from the model: it gets no metadata and no
 * summary, and text of the answer that reads as an instruction is not stored.
 */
import { looksLikeInjection } from '../../memory/memories/memory-guards';
import { idLabel } from '../../memory/short-ids';
import type { ConsolidationAnswer } from './operations';
import { episodeOf, evidence, reject, type PlanContext } from './plan-context';
import { contentProblem } from './plan-memory-operations';

/** Importance scores, with the metadata that rides on them, and summaries of the episodes shown. */
export function planEpisodeNotes(ctx: PlanContext, answer: ConsolidationAnswer): void {
  const { plan, episodeById } = ctx;
  for (const op of answer.importance) {
    const id = episodeOf(ctx, 'importance', op.episode);
    if (!id) continue;
    plan.importance.push({ episodeId: id, score: op.score });
    // The episode's metadata rides on its importance entry; a withheld message (an injection
    // attempt, never shown to the model) gets none.
    const { topics, entities, emotionalTone, taskType } = op;
    const described = topics.length + entities.length > 0 || emotionalTone !== undefined || taskType !== undefined;
    if (described && !looksLikeInjection(episodeById.get(id)!.content)) plan.metadata!.push({ episodeId: id, topics, entities, emotionalTone, taskType });
  }
  for (const op of answer.summaries) {
    const id = episodeOf(ctx, 'summaries', op.episode);
    const label = idLabel('E', op.episode.n);
    if (!id) continue;
    if (looksLikeInjection(episodeById.get(id)!.content))
      reject(ctx, 'summaries', `episode ${label} tries to instruct the memory system; its summary is not stored`);
    else if (looksLikeInjection(op.summary)) reject(ctx, 'summaries', `summary of episode ${label} reads as an instruction; not stored`);
    else plan.summaries.push({ episodeId: id, summary: op.summary });
  }
}

/** Entities and their observations, on the person's own evidence. */
export function planEntities(ctx: PlanContext, answer: ConsolidationAnswer): void {
  for (const op of answer.entities) {
    const episodeIds = evidence(ctx, 'entities', op.episodes);
    if (episodeIds === null) continue;
    const observations = op.observations.filter((o) => {
      const problem = contentProblem(o);
      if (problem) reject(ctx, 'entities', `observation about ${op.name} ${problem}`);
      return !problem;
    });
    if (looksLikeInjection(op.name)) reject(ctx, 'entities', 'an entity name reads as an instruction; not stored');
    else if (episodeIds.length === 0) reject(ctx, 'entities', `${op.name}: no evidence from the person's own turns`);
    else
      ctx.plan.entities.push({
        name: op.name,
        kind: op.kind,
        observations,
        favorability: op.favorability ?? 0,
        episodeIds,
        aliases: op.aliases.filter((a) => !looksLikeInjection(a)),
        ...(op.relation && !looksLikeInjection(op.relation) ? { relation: op.relation } : {}),
      });
  }
}
