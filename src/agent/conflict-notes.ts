/**
 * Contradictions in what the model reads for a reply: a memory the message brought up that is
 * one side of an open conflict is shown with both sides, each annotated with its date and source
 * and which is likely current (the domain's `conflictNote`), so the model answers with the
 * current side, or asks, instead of picking one of two facts at random. A side the soul states
 * is listed too (annotated), since the soul states it as settled.
 */
import { conflictNote, type Conflict } from '../memory/memories/conflicts';
import type { PromptMemory } from './prompt-builder';

/** The ids of the memories `conflicts` involves. */
function sidesOf(conflicts: readonly Conflict[]): Set<string> {
  return new Set(conflicts.flatMap((c) => [c.current.id, c.other.id]));
}

/**
 * `memories` (best first) with every memory that is a side of a conflict annotated and the
 * other side inserted right after it when it was not among them. `shownInSoul`: memories the
 * message brought up that the soul states (left out of the list unless in a conflict).
 */
export function withConflicts(memories: readonly PromptMemory[], shownInSoul: readonly string[], conflicts: readonly Conflict[]): PromptMemory[] {
  if (conflicts.length === 0) return [...memories];
  const sides = sidesOf(conflicts);
  const brought = [...memories, ...shownInSoul.filter((id) => sides.has(id)).map((id) => ({ id, kind: 'memory' as const, text: '' }))];
  const listed = new Set<string>();
  const out: PromptMemory[] = [];
  const add = (id: string, text: string) => {
    if (listed.has(id)) return;
    listed.add(id);
    out.push({ id, kind: 'memory', text: `${text} ${conflictNote(id, conflicts)}` });
  };
  for (const m of brought) {
    if (m.kind !== 'memory' || !sides.has(m.id)) {
      if (m.text !== '') out.push(m);
      continue;
    }
    for (const c of conflicts) {
      if (c.current.id !== m.id && c.other.id !== m.id) continue;
      add(c.current.id, c.current.content);
      add(c.other.id, c.other.content);
    }
  }
  return out;
}
