/**
 * What a digest's items are and how they are read back from a Digest row's `items` JSON (and the
 * audit events' JSON fields): shared by building, rendering and scrubbing a digest.
 */
import type { Digest, Prisma } from '../../storage/prisma';

/**
 * The kinds of digest items, in the order their sections appear: the audit actions a digest
 * lists, then `conflict`, a side of an open contradiction the person is asked about.
 */
export type DigestAction = 'create' | 'update' | 'contradict' | 'deactivate' | 'conflict';

/** One numbered line of a digest (the `items` JSON of a Digest row). */
export interface DigestItem {
  readonly n: number;
  /** The memory `/forget n` removes (for a correction: the new version; its chain goes too). */
  readonly memoryId: string;
  readonly action: DigestAction;
  readonly text: string;
  /** Other memories whose text the line quotes; forgetting any of them removes the line too. */
  readonly refs?: readonly string[];
}

/** The audit actions read into items. */
export const ACTIONS: readonly DigestAction[] = ['create', 'update', 'contradict', 'deactivate'];
/** Every kind of item, in the order of the sections. */
export const SECTIONS: readonly DigestAction[] = [...ACTIONS, 'conflict'];

function jsonObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export function stringField(value: Prisma.JsonValue | null, key: string): string | undefined {
  const v = jsonObject(value)[key];
  return typeof v === 'string' ? v : undefined;
}

export function numberField(value: Prisma.JsonValue | null, key: string): number {
  const v = jsonObject(value)[key];
  return typeof v === 'number' ? v : 0;
}

/** The items stored on a digest row (unknown shapes are dropped). */
export function digestItems(digest: Pick<Digest, 'items'>): DigestItem[] {
  if (!Array.isArray(digest.items)) return [];
  return digest.items
    .filter((i): i is Prisma.JsonObject => Boolean(i) && typeof i === 'object' && !Array.isArray(i))
    .flatMap((i) => {
      if (typeof i.n !== 'number' || typeof i.memoryId !== 'string' || typeof i.text !== 'string' || !SECTIONS.includes(i.action as DigestAction)) return [];
      const refs = Array.isArray(i.refs) ? i.refs.filter((r): r is string => typeof r === 'string') : [];
      return [{ n: i.n, memoryId: i.memoryId, action: i.action as DigestAction, text: i.text, ...(refs.length > 0 ? { refs } : {}) }];
    });
}
