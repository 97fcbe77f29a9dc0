/**
 * What a memory is about. The knowledge categories are what consolidation, the compaction flush
 * and the memory tools may file a memory under; {@link CONVERSATION_CATEGORY} is the record of
 * an ended conversation ("The user talked about ..."), a summary rather than knowledge about the
 * person: searchable and shown to later replies like any memory, but left out of the soul, the
 * default `/memories` list and the digests, which list what is known about the person.
 */

/** Categories of knowledge about the person and their world. */
export const MEMORY_CATEGORIES = [
  'fact',
  'preference',
  'pattern',
  'goal',
  'relationship',
  'skill',
  'routine',
  'emotional',
  'project',
  'schedule',
  'interest',
  'style',
] as const;
export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number];

/** The category of the summary memory written when a conversation ends. */
export const CONVERSATION_CATEGORY = 'conversation';

/** Whether a memory of `category` belongs in the lists of what is known about the person. */
export function isKnowledge(category: string): boolean {
  return category !== CONVERSATION_CATEGORY;
}

/** Prisma-style filter for the rows {@link isKnowledge} keeps (the soul, /memories, digests). */
export const KNOWLEDGE_ONLY = { category: { not: CONVERSATION_CATEGORY } } as const;
