/**
 * What the memory writer reads before it changes anything: the scope exists, every cited episode
 * is evidence from the person (memory-guards.ts), the memory named exists in the scope, and which
 * current memory, if any, the new content restates (restatements.ts). A failed check refuses the
 * write ({@link MemoryRefused}, or "not found") before a row is touched.
 */
import { NotFoundError } from '../../shared/errors';
import type { Memory } from '../../storage/prisma';
import { evidenceProblem, isRelayedNote, MemoryRefused, relayedFromOf } from './memory-guards';
import type { ChangeOrigin, NewMemory, SourceType, Tx } from './memory-writer';
import { compatibleCategories, isRestatement, keyWords } from './restatements';

/** The scope rule: a memory is written into a scope that exists. */
export async function checkScope(tx: Tx, scopeId: string): Promise<void> {
  const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { id: true } });
  if (!scope) throw new MemoryRefused('memory.no_scope', `no scope ${scopeId}`);
}

/**
 * The evidence rule, against the database: every cited episode exists in the scope and is the
 * person's (see `evidenceProblem`); at least one is cited unless the owner wrote the memory. A
 * memory learned only from notes relaying the person cannot claim to be "stated" by them.
 * Returns the distinct evidence ids.
 */
export async function checkEvidence(
  tx: Tx,
  scopeId: string,
  cited: readonly string[] | undefined,
  origin: ChangeOrigin,
  sourceType?: SourceType,
): Promise<string[]> {
  const ids = [...new Set(cited ?? [])];
  if (ids.length === 0) {
    if (origin.by === 'owner') return [];
    throw new MemoryRefused('memory.no_evidence', "a memory needs evidence: the person's own turns it was learned from");
  }
  const rows = await tx.episode.findMany({ where: { scopeId, id: { in: ids } }, select: { id: true, role: true, content: true, metadata: true } });
  const relayedIds = rows.map((r) => relayedFromOf(r)).filter((id): id is string => id !== undefined);
  const relayed =
    relayedIds.length === 0
      ? []
      : await tx.episode.findMany({ where: { scopeId, id: { in: relayedIds } }, select: { id: true, role: true, content: true, metadata: true } });
  for (const id of ids) {
    const row = rows.find((r) => r.id === id);
    if (!row) throw new MemoryRefused('memory.bad_evidence', `message ${id} is not in this memory`);
    const problem = evidenceProblem(
      row,
      relayed.find((r) => r.id === relayedFromOf(row)),
    );
    if (problem) throw new MemoryRefused('memory.bad_evidence', `episode ${id} is no evidence: it ${problem}`);
  }
  if (sourceType === 'stated' && rows.every((r) => isRelayedNote(r))) {
    throw new MemoryRefused('memory.relayed_not_stated', 'a memory learned only from notes relaying the person is "observed", not "stated"');
  }
  return ids;
}

/** The memory `id` of the scope; "not found" when it is in another scope or gone. */
export async function load(tx: Tx, scopeId: string, id: string): Promise<Memory> {
  const memory = await tx.memory.findFirst({ where: { scopeId, id } });
  if (!memory) throw new NotFoundError(`no memory ${id} here`, { code: 'memory.not_found' });
  return memory;
}

/** Candidates for the word-only restatement check, when no neighbours came with the write. */
const WORD_CANDIDATES = 50;

/**
 * The current memory of the scope that `input` restates, with its cosine when known, or undefined.
 * With a `subjectId`, a memory about someone else never counts ("Bo is vegetarian" does not
 * restate "Ana is vegetarian"); one without a subject still may.
 */
export async function restatedMemory(tx: Tx, input: NewMemory, content: string, category: string, subjectId?: string): Promise<Memory | undefined> {
  const current = {
    scopeId: input.scopeId,
    active: true,
    validTo: null,
    id: input.notRestating ? { not: input.notRestating } : undefined,
    ...(subjectId ? { OR: [{ subjectId }, { subjectId: null }] } : {}),
  };
  const near = input.neighbours ?? [];
  if (near.length > 0) {
    const rows = await tx.memory.findMany({ where: { ...current, id: { in: near.map((n) => n.id).filter((id) => id !== input.notRestating) } } });
    const ranked = [...near].sort((a, b) => b.score - a.score);
    for (const n of ranked) {
      const row = rows.find((r) => r.id === n.id);
      if (row && compatibleCategories(category, row.category) && isRestatement(content, row.content, n.score)) return row;
    }
  }
  const longest = [...keyWords(content)].sort((a, b) => b.length - a.length)[0];
  if (!longest) return undefined;
  const rows = await tx.memory.findMany({ where: { ...current, content: { contains: longest } }, take: WORD_CANDIDATES });
  return rows.find((r) => compatibleCategories(category, r.category) && isRestatement(content, r.content, undefined));
}
