/**
 * A memory with its whole supersession chain: the old and new versions are the same knowledge,
 * so what the owner is shown before a forget, and what the forget removes, is always the chain.
 */
import { NotFoundError } from '../../shared/errors';
import type { PrismaClient } from '../../storage/prisma';
import type { Tx } from './redact-derived';

/** A memory shown before it is forgotten. */
export interface MemoryMatch {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  /** active | faded | superseded */
  readonly state: 'active' | 'faded' | 'superseded';
}

function stateOf(m: { active: boolean; validTo: Date | null }): MemoryMatch['state'] {
  return m.validTo ? 'superseded' : m.active ? 'active' : 'faded';
}

function toMatch(m: { id: string; category: string; content: string; confidence: number; active: boolean; validTo: Date | null }): MemoryMatch {
  return { id: m.id, category: m.category, content: m.content, confidence: m.confidence, state: stateOf(m) };
}

/**
 * The memory and every version linked to it either way, current ones first; read through `db` so a
 * forget's transaction sees the chain as it removes it. NotFoundError when the memory is not in the scope.
 */
export async function chainOf(db: Tx | PrismaClient, scopeId: string, memoryId: string): Promise<MemoryMatch[]> {
  const select = { id: true, category: true, content: true, confidence: true, active: true, validTo: true, supersededById: true } as const;
  const root = await db.memory.findFirst({ where: { scopeId, id: memoryId }, select });
  if (!root)
    throw new NotFoundError(`Memory ${memoryId} is not among the memories kept here (it may have been forgotten already)`, { code: 'memory.not_found' });
  const chain = new Map([[root.id, root]]);
  let frontier = [root.id];
  while (frontier.length > 0) {
    const ids = [...frontier];
    const pointedTo = [...chain.values()].filter((m) => ids.includes(m.id) && m.supersededById).map((m) => m.supersededById!);
    const related = await db.memory.findMany({ where: { scopeId, OR: [{ id: { in: pointedTo } }, { supersededById: { in: ids } }] }, select });
    frontier = [];
    for (const m of related) {
      if (chain.has(m.id)) continue;
      chain.set(m.id, m);
      frontier.push(m.id);
    }
  }
  return [...chain.values()].sort((a, b) => Number(Boolean(a.validTo)) - Number(Boolean(b.validTo))).map(toMatch);
}
