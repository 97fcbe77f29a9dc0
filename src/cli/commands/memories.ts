/**
 * `memories --scope S [--all] [--json]`: what a scope's agent believes now, most confident first;
 * with --all also the faded and superseded versions (marked), kept for history.
 */
import type { Memory } from '../../memory/records';
import { writeResult, type Command } from '../command';
import { oneLine, requireScope } from './scope-option';

type MemoryState = 'active' | 'faded' | 'superseded';

function stateOf(m: Memory): MemoryState {
  return m.validTo ? 'superseded' : m.active ? 'active' : 'faded';
}

const ORDER: Record<MemoryState, number> = { active: 0, faded: 1, superseded: 2 };

/** The public shape of a memory in CLI output. */
export function memoryToJson(m: Memory) {
  return {
    id: m.id,
    category: m.category,
    content: m.content,
    confidence: m.confidence,
    importance: m.importance,
    state: stateOf(m),
    active: m.active,
    sourceType: m.sourceType,
    reinforcementCount: m.reinforcementCount,
    lastReinforcedAt: m.lastReinforcedAt.toISOString(),
    validFrom: m.validFrom.toISOString(),
    validTo: m.validTo?.toISOString() ?? null,
    supersededById: m.supersededById,
  };
}

export const memoriesCommand: Command = {
  name: 'memories',
  usage: 'memories --scope S [--all] [--json]',
  summary: "list a scope's current memories (--all: with faded and superseded ones)",
  options: { scope: { type: 'string' }, all: { type: 'boolean' } },
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'memories');
    const all = ctx.values.all === true;
    const { memories: rows } = await core.catalog.list(scope.id, { state: all ? 'all' : 'current' });
    const memories = rows.sort(
      (a, b) =>
        ORDER[stateOf(a)] - ORDER[stateOf(b)] ||
        (stateOf(a) === 'superseded' ? b.validTo!.getTime() - a.validTo!.getTime() : b.confidence - a.confidence) ||
        a.validFrom.getTime() - b.validFrom.getTime() ||
        (a.id < b.id ? -1 : 1),
    );
    writeResult(
      ctx,
      { scope: scope.key, memories: memories.map(memoryToJson) },
      memories.length === 0
        ? `no ${all ? '' : 'current '}memories in ${scope.key}`
        : memories
            .map((m) => {
              const state = stateOf(m);
              return `${m.id}  ${m.confidence.toFixed(2)}  ${m.category.padEnd(12)} ${state === 'active' ? '' : `[${state}] `}${oneLine(m.content, 160)}`;
            })
            .join('\n'),
    );
    return 0;
  },
};
