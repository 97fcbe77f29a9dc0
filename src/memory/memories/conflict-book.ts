/**
 * The service of contradictions for callers above the domain: list a scope's open conflicts
 * (conflicts.ts), and settle them when the person says which side is true (`/keep N`, a button
 * under the digest's "Which is true?"). Settling goes through the memory writer
 * (`resolveContradiction`: the other side superseded, audited) and rebuilds the soul in the same
 * transaction, so no moment exists at which the soul states a side the person just set aside.
 * Every text returned passes the output filter.
 */
import type { PrismaClient } from '../../storage/prisma';
import { showStored, showStoredValue } from '../output-filter';
import { regenerateSoulIn, type SoulOptions } from '../profiles/soul';
import { openConflicts, type Conflict } from './conflicts';
import { resolveContradiction } from './memory-writer';

/** What keeping a memory did: its text and the texts of the sides set aside (none: it was in no open conflict). */
export interface KeepResult {
  readonly kept: { readonly id: string; readonly content: string } | null;
  readonly setAside: ReadonlyArray<{ readonly id: string; readonly content: string }>;
}

export interface ConflictBook {
  /** The scope's open conflicts, each with the side most likely current. */
  list(scopeId: string): Promise<Conflict[]>;
  /**
   * The person says `memoryId` is true: every open conflict it is in is settled in its favour
   * (the other side superseded, audited with `reason`) and the soul rebuilt.
   */
  keep(scopeId: string, memoryId: string, origin: { reason: string; now: Date }): Promise<KeepResult>;
}

export function createConflictBook(deps: { prisma: PrismaClient; soul: Omit<SoulOptions, 'now' | 'runId'> }): ConflictBook {
  const { prisma } = deps;
  return {
    list: async (scopeId) => showStoredValue(await openConflicts(prisma, scopeId)),
    keep: (scopeId, memoryId, origin) =>
      prisma.$transaction(async (tx) => {
        const mine = (await openConflicts(tx, scopeId)).filter((c) => c.current.id === memoryId || c.other.id === memoryId);
        if (mine.length === 0) return { kept: null, setAside: [] };
        const setAside: Array<{ id: string; content: string }> = [];
        let kept = mine[0]!.current.id === memoryId ? mine[0]!.current : mine[0]!.other;
        for (const c of mine) {
          const other = c.current.id === memoryId ? c.other : c.current;
          await resolveContradiction(tx, scopeId, memoryId, other.id, { now: origin.now, reason: origin.reason });
          setAside.push({ id: other.id, content: showStored(other.content) });
        }
        await regenerateSoulIn(tx, scopeId, { ...deps.soul, now: origin.now });
        kept = { ...kept, content: showStored(kept.content) };
        return { kept: { id: kept.id, content: kept.content }, setAside };
      }),
  };
}
