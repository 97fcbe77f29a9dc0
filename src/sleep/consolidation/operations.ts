/**
 * What the consolidation model answers (seed 000's operations plus seed 003's importance scoring
 * and entity observations, seed 004's summaries of verbose episodes), as a zod schema.
 *
 * Ids are the short ids the prompt showed, with their kind (episode "E3", memory "M7"), never
 * database ids; they are parsed here keeping the kind the model wrote (a bare number has none),
 * and the planner maps them back, refusing ids the prompt did not show and ids of the wrong kind
 * (an episode named where a memory belongs, issue 15). Every list is optional so a model that
 * has nothing to say for an operation may leave it out.
 */
import { z } from 'zod';
import { MEMORY_CATEGORIES } from '../../memory/memories/categories';
import { parseIdRef, type IdRef } from '../../memory/short-ids';

/** A prompt id as written: "M3", "E5" or a bare number; anything else fails the answer (repair turn). */
export const shortId = z.union([z.number(), z.string()]).transform((value, ctx): IdRef => {
  const ref = parseIdRef(value);
  if (ref) return ref;
  ctx.addIssue({ code: 'custom', message: `"${String(value).slice(0, 20)}" is not an id from the prompt (write memories as "M3", episodes as "E5")` });
  return z.NEVER;
});
const evidence = z.array(shortId).max(50).default([]);
const text = z.string().trim().min(1).max(1_000);
const score = z.coerce.number().min(0).max(1);

/** Most topics or entities kept for one episode (a message is about a few things, not dozens). */
export const MAX_EPISODE_TAGS = 10;
/** Longest topic or entity name kept (the import's own cap on a tag, normalize.ts). */
const MAX_TAG_CHARS = 128;
/** Longest tone, task type or relation kept (the import's own cap, normalize.ts). */
const MAX_LABEL_CHARS = 64;

/*
 * Episode metadata (seed 000: topics, entities, emotional tone, task type) rides on the
 * importance entry the answer already gives each of the owner's episodes: no list of its own, so
 * the instructions and the answer schema, sent with every request, grow as little as possible
 * (a small model's 8k window holds them, the answer and the episodes). It is a by-product, so it
 * is read leniently field by field and never costs a repair turn: a field the model got wrong
 * (a string where a list belongs, a number where a word belongs) is left out. Bounds are applied
 * here, not in the schema, whose every bound would be said in words to the model.
 */
const tags = z
  .array(z.string().catch(''))
  .catch([])
  .optional()
  .transform((values) =>
    (values ?? [])
      .map((v) => v.trim())
      .filter((v) => v.length > 0 && v.length <= MAX_TAG_CHARS)
      .slice(0, MAX_EPISODE_TAGS),
  );
const label = z
  .string()
  .optional()
  .catch(undefined)
  .transform((v) => {
    const trimmed = v?.trim() ?? '';
    return trimmed.length > 0 && trimmed.length <= MAX_LABEL_CHARS ? trimmed : undefined;
  });

export const consolidationAnswerSchema = z.object({
  new: z
    .array(
      z.object({
        category: z.string().trim().toLowerCase().pipe(z.enum(MEMORY_CATEGORIES)).catch('fact'),
        content: text,
        /** Left out, the planner takes the low end of the source's range (plan.ts `DEFAULT_CONFIDENCE`) instead of a repair turn. */
        confidence: score.optional(),
        source: z.enum(['stated', 'observed', 'inferred']).catch('inferred'),
        importance: score.optional(),
        episodes: evidence,
      }),
    )
    .default([]),
  reinforce: z.array(z.object({ memory: shortId, episodes: evidence, reason: z.string().trim().max(500).default('') })).default([]),
  update: z.array(z.object({ memory: shortId, content: text, episodes: evidence, reason: z.string().trim().max(500).default('') })).default([]),
  contradict: z.array(z.object({ memory: shortId, content: text, episodes: evidence, reason: z.string().trim().max(500).default('') })).default([]),
  decay: z.array(z.object({ memory: shortId, confidence: score, reason: z.string().trim().max(500).default('') })).default([]),
  connect: z.array(z.object({ a: shortId, b: shortId, relationship: z.string().trim().min(1).max(60) })).default([]),
  importance: z.array(z.object({ episode: shortId, score, topics: tags, entities: tags, emotionalTone: label, taskType: label })).default([]),
  summaries: z.array(z.object({ episode: shortId, summary: z.string().trim().min(1).max(600) })).default([]),
  entities: z
    .array(
      z.object({
        name: z.string().trim().min(1).max(80),
        kind: z.enum(['person', 'pet', 'place', 'organization', 'thing']).catch('thing'),
        observations: z.array(z.string().trim().min(1).max(300)).max(10).default([]),
        /** How the owner's feeling toward them moved: -0.2..0.2. */
        favorability: z.coerce.number().min(-0.2).max(0.2).optional(),
        /**
         * How a person is related to the owner ("husband", "sister", "colleague"): kept as the
         * entity's `relation` attribute, so a spouse is shown as family from the first night on.
         * Lenient: a relation the model got wrong is left out, never a repair turn.
         */
        relation: label,
        /** Other names the same entity went by ("my partner" before the person named her). */
        aliases: z.array(z.string().trim().min(1).max(80)).max(5).catch([]).default([]),
        episodes: evidence,
      }),
    )
    .default([]),
  /**
   * Reflection's insights (seed 003), only when the prompt asked for them (prompt.ts
   * `INSIGHTS_REQUEST`); the planner keeps at most three and holds them to every memory rule.
   */
  insights: z
    .array(z.object({ content: z.string().trim().min(1).max(500), confidence: score.default(0.5), episodes: evidence }))
    .max(20)
    .default([]),
  /**
   * The model's explicit "nothing here is worth remembering" (a reason, or true): an answer
   * without a single operation is accepted only with it (see `answerProblem` in answer-review.ts).
   */
  nothing: z.union([z.boolean(), z.string().trim().max(500)]).optional(),
});

export type ConsolidationAnswer = z.infer<typeof consolidationAnswerSchema>;

/**
 * The answer's fields, as the prompt describes them to the model: words, not a pseudo-JSON
 * template (small models copy a template's placeholders into their answers). The worked example
 * after it (prompt.ts `WORKED_EXAMPLE`) shows the JSON.
 */
export const ANSWER_FORMAT = `Fields (each a list; leave out the ones you do not need):
- "new": memories to create, each with "category" (one of ${MEMORY_CATEGORIES.join(', ')}), "content", "confidence" (0 to 1), "source" (stated, observed or inferred), "importance" (0 to 1) and "episodes" (the E-ids of its evidence).
- "reinforce": a memory the episodes confirm: "memory" (its M-id), "episodes" (E-ids), "reason".
- "update": a memory the episodes correct or change: "memory" (M-id), "content" (the corrected memory), "episodes" (E-ids), "reason".
- "contradict": a memory the episodes conflict with: "memory" (M-id), "content" (the conflicting new statement), "episodes" (E-ids), "reason".
- "decay": a memory the episodes make less likely: "memory" (M-id), "confidence" (the new, lower value), "reason".
- "connect": two memories that explain each other: "a" and "b" (M-ids), "relationship".
- "importance": "episode" (E-id), "score" (0 to 1), "topics", "entities" (names it mentions), "emotionalTone" and "taskType" (a word each) for each of the owner's episodes.
- "summaries": "episode" (E-id of an episode marked [long]) and "summary".
- "entities": "name", "kind" (person, pet, place, organization or thing), "observations" (short sentences), "favorability" (how the owner's feeling toward them moved, -0.2 to 0.2), "relation" (to the owner, e.g. "husband"), "aliases" (earlier names such as "my sister", when any) and "episodes" (E-ids).
Memories are named by their M-id ("M2") and episodes by their E-id ("E5"): never put an E-id where a memory belongs or an M-id where episodes belong, even when the numbers match.`;
