/**
 * `memories --scope S [--all] [--json]`: what a scope's agent believes now, most confident first;
 * with --all also the faded and superseded versions (marked), kept for history.
 *
 * `memories fix --scope S --id ID --text "..."`, `memories pin|unpin --scope S --id ID`: the
 * operator corrects or pins a memory (memory-corrections.ts: the same new version and pin the
 * person's `/fix` and `/pin` make, audited as the operator's).
 */
import type { Memory } from '../../memory/records';
import { ValidationError } from '../../shared/errors';
import type { Core } from '../../core';
import type { CorrectionOrigin } from '../../memory/memories/memory-corrections';
import { writeResult, type CommandRunner, type CommandContext } from '../command';
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
    pinned: m.pinned,
  };
}

/** The changes `memories` makes besides listing. */
const CHANGES = ['fix', 'pin', 'unpin'] as const;
type Change = (typeof CHANGES)[number];

const ORIGIN: CorrectionOrigin = { by: 'operator', door: 'the CLI' };

/** `memories fix|pin|unpin`: one change to one memory, printed as the memory after it. */
async function change(ctx: CommandContext, core: Core, scopeId: string, scopeKey: string, what: Change): Promise<number> {
  const id = ctx.values.id;
  if (typeof id !== 'string' || id.trim() === '')
    throw new ValidationError(`memories ${what} needs --id ID (see \`memories --scope S\`)`, { code: 'cli.usage' });
  let memory: Memory;
  if (what === 'fix') {
    const text = ctx.values.text;
    if (typeof text !== 'string') throw new ValidationError('memories fix needs --text "what is true instead"', { code: 'cli.usage' });
    memory = await core.corrections.correct(scopeId, id.trim(), text, ORIGIN);
  } else {
    memory = await core.corrections.pin(scopeId, id.trim(), what === 'pin', ORIGIN);
  }
  const verb = what === 'fix' ? `corrected: new version ${memory.id}` : what === 'pin' ? 'pinned' : 'unpinned';
  writeResult(ctx, { scope: scopeKey, memory: memoryToJson(memory) }, `${verb}: ${oneLine(memory.content, 160)}`);
  return 0;
}

export const memoriesCommand: CommandRunner = {
  async run(ctx) {
    const what = ctx.positionals[0];
    if (what !== undefined && !(CHANGES as readonly string[]).includes(what))
      throw new ValidationError(`memories takes ${CHANGES.join(', ')} or nothing, not "${what}"`, { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'memories');
    if (what !== undefined) return change(ctx, core, scope.id, scope.key, what as Change);
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
              const pin = m.pinned ? '[pinned] ' : '';
              return `${m.id}  ${m.confidence.toFixed(2)}  ${m.category.padEnd(12)} ${pin}${state === 'active' ? '' : `[${state}] `}${oneLine(m.content, 160)}`;
            })
            .join('\n'),
    );
    return 0;
  },
};
