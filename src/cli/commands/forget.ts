/**
 * `forget --scope S (--memory ID | --words "...") [--yes]`: removes memories at the owner's
 * request, everywhere they are kept (rows, full-text and vector indexes, soul, digests, audit
 * text). Without --yes it only shows what would be forgotten.
 */
import type { MemoryMatch } from '../../memory/forget/forget-service';
import { ValidationError } from '../../shared/errors';
import { writeResult, type Command } from '../command';
import { oneLine, requireScope } from './scope-option';

function listMatches(matches: readonly MemoryMatch[]): string[] {
  return matches.map((m) => `  ${m.id}  ${m.category.padEnd(12)} ${m.state === 'active' ? '' : `[${m.state}] `}${oneLine(m.content, 140)}`);
}

export const forgetCommand: Command = {
  name: 'forget',
  usage: 'forget --scope S (--memory ID | --words "...") [--yes]',
  summary: 'forget memories for good (without --yes: show what would go)',
  options: { scope: { type: 'string' }, memory: { type: 'string' }, words: { type: 'string' }, yes: { type: 'boolean' } },
  async run(ctx) {
    const memoryId = ctx.values.memory as string | undefined;
    const words = ctx.values.words as string | undefined;
    if ((memoryId === undefined) === (words === undefined)) throw new ValidationError('forget needs exactly one of --memory ID or --words "..."', { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'forget');
    const service = core.forget;
    const reason = 'forgotten from the command line';

    const byWords = words !== undefined ? await service.forgetMatching(scope.id, words) : undefined;
    const matches = byWords ? byWords.matches : await service.preview(scope.id, memoryId!);
    if (matches.length === 0) {
      writeResult(ctx, { scope: scope.key, applied: false, matches: [] }, `no memory in ${scope.key} contains all of: ${words}`);
      return 0;
    }
    if (ctx.values.yes !== true) {
      writeResult(
        ctx,
        { scope: scope.key, applied: false, matches },
        [`would forget ${matches.length} ${matches.length === 1 ? 'memory' : 'memories'} in ${scope.key}:`, ...listMatches(matches), 'run again with --yes to forget them'].join('\n'),
      );
      return 0;
    }
    const result = byWords ? await byWords.confirm({ reason }) : await service.forgetMemory(scope.id, memoryId!, { reason });
    const notes = [
      ...(result.vectorsDeleted ? [] : ['the vector index could not be updated: run `npm run cli -- reindex`']),
      ...(result.soulVersion === null ? ['the soul could not be regenerated and was removed; the next sleep rebuilds it'] : []),
    ];
    writeResult(
      ctx,
      { scope: scope.key, applied: true, matches, ...result },
      [`forgot ${result.removedIds.length} ${result.removedIds.length === 1 ? 'memory' : 'memories'} in ${scope.key}:`, ...listMatches(matches), ...notes.map((n) => `note: ${n}`)].join('\n'),
    );
    return 0;
  },
};
