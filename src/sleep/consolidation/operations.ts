/**
 * What the consolidation model answers (seed 000's operations plus seed 003's importance scoring
 * and entity observations, seed 004's summaries of verbose episodes), as a zod schema.
 *
 * Ids are the short integers the prompt showed (episode 3, memory 7), never database ids; the
 * planner maps them back and rejects any the prompt did not show. Every list is optional so a
 * model that has nothing to say for an operation may leave it out.
 */
import { z } from 'zod';
import { MEMORY_CATEGORIES } from '../../memory/memories/categories';

const shortId = z.coerce.number().int().positive();
const evidence = z.array(shortId).max(50).default([]);
const text = z.string().trim().min(1).max(1_000);
const score = z.coerce.number().min(0).max(1);

export const consolidationAnswerSchema = z.object({
  new: z
    .array(
      z.object({
        category: z.string().trim().toLowerCase().pipe(z.enum(MEMORY_CATEGORIES)).catch('fact'),
        content: text,
        confidence: score,
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
  importance: z.array(z.object({ episode: shortId, score })).default([]),
  summaries: z.array(z.object({ episode: shortId, summary: z.string().trim().min(1).max(600) })).default([]),
  entities: z
    .array(
      z.object({
        name: z.string().trim().min(1).max(80),
        kind: z.enum(['person', 'pet', 'place', 'organization', 'thing']).catch('thing'),
        observations: z.array(z.string().trim().min(1).max(300)).max(10).default([]),
        /** How the owner's feeling toward them moved: -0.2..0.2. */
        favorability: z.coerce.number().min(-0.2).max(0.2).optional(),
        /** Other names the same entity went by ("my partner" before the person named her). */
        aliases: z.array(z.string().trim().min(1).max(80)).max(5).catch([]).default([]),
        episodes: evidence,
      }),
    )
    .default([]),
  /**
   * The model's explicit "nothing here is worth remembering" (a reason, or true): an answer
   * without a single operation is accepted only with it (see `answerProblem` in consolidator.ts).
   */
  nothing: z.union([z.boolean(), z.string().trim().max(500)]).optional(),
});

export type ConsolidationAnswer = z.infer<typeof consolidationAnswerSchema>;

/** The answer format, as the prompt shows it to the model. */
export const ANSWER_FORMAT = `{
  "new": [{ "category": "fact|preference|pattern|goal|relationship|skill|routine|emotional|project|schedule|interest|style", "content": "...", "confidence": 0.0-1.0, "source": "stated|observed|inferred", "importance": 0.0-1.0, "episodes": [episode numbers] }],
  "reinforce": [{ "memory": memory number, "episodes": [episode numbers], "reason": "..." }],
  "update": [{ "memory": memory number, "content": "corrected content", "episodes": [episode numbers], "reason": "..." }],
  "contradict": [{ "memory": memory number, "content": "the conflicting new statement", "episodes": [episode numbers], "reason": "..." }],
  "decay": [{ "memory": memory number, "confidence": 0.0-1.0, "reason": "..." }],
  "connect": [{ "a": memory number, "b": memory number, "relationship": "..." }],
  "importance": [{ "episode": episode number, "score": 0.0-1.0 }],
  "summaries": [{ "episode": episode number, "summary": "..." }],
  "entities": [{ "name": "...", "kind": "person|pet|place|organization|thing", "observations": ["..."], "favorability": -0.2..0.2, "aliases": ["earlier names, e.g. my sister"], "episodes": [episode numbers] }]
}`;
