/**
 * `forget --scope S (--memory ID | --words "...") [--yes]`: removes memories at the owner's
 * request, everywhere they are kept (rows, full-text and vector indexes, soul, digests, audit
 * text). Without --yes it only shows what would be forgotten.
 */
import { changesAnything, describeOtherChanges, type ForgetCounts } from '../../memory/forget/forget-effects';
import type { MemoryMatch } from '../../memory/forget/forget-service';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { oneLine, requireScope } from './scope-option';
import { plural } from '../../shared/plural';

/** The other changes as one line, when there are some: the same words before (would) and after (did). */
function otherChanges(counts: ForgetCounts, lead: string): string[] {
  const parts = describeOtherChanges(counts);
  return parts.length > 0 ? [`${lead} ${parts.join(', ')}`] : [];
}

function listMatches(matches: readonly MemoryMatch[]): string[] {
  return matches.map((m) => `  ${m.id}  ${m.category.padEnd(12)} ${m.state === 'active' ? '' : `[${m.state}] `}${oneLine(m.content, 140)}`);
}

export const forgetCommand: CommandRunner = {
  async run(ctx) {
    const memoryId = ctx.values.memory as string | undefined;
    const words = ctx.values.words as string | undefined;
    if ((memoryId === undefined) === (words === undefined))
      throw new ValidationError('forget needs exactly one of --memory ID or --words "..."', { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'forget');
    const service = core.forget;
    const reason = 'forgotten from the command line';

    // The preview does the forget in a transaction it rolls back: its counts are what --yes changes.
    const preview = words !== undefined ? await service.forgetMatching(scope.id, words) : await service.prepareForget(scope.id, memoryId!);
    const { matches, counts } = preview;
    const episodes = counts.messages;
    if (matches.length === 0 && !changesAnything(counts)) {
      writeResult(ctx, { scope: scope.key, applied: false, matches: [], episodes, counts }, `nothing in ${scope.key} holds all of: ${words}`);
      return 0;
    }
    if (ctx.values.yes !== true) {
      writeResult(
        ctx,
        { scope: scope.key, applied: false, matches, episodes, counts },
        [
          `would forget ${plural(matches.length, 'memory', 'memories')} in ${scope.key}:`,
          ...listMatches(matches),
          ...otherChanges(counts, 'and change'),
          'run again with --yes to forget them',
        ].join('\n'),
      );
      return 0;
    }
    const byWords = words !== undefined ? preview : undefined;
    const result = byWords ? await byWords.confirm({ reason }) : await service.forgetMemory(scope.id, memoryId!, { reason });
    const notes = [
      ...(result.vectorsDeleted ? [] : ['the vector index could not be updated: run `npm run cli -- reindex`']),
      ...(result.checkpointed ? [] : ['another process kept the database log busy: the old pages are emptied at the next start']),
    ];
    writeResult(
      ctx,
      { scope: scope.key, applied: true, matches, ...result },
      [
        `forgot ${result.removedIds.length} ${result.removedIds.length === 1 ? 'memory' : 'memories'} in ${scope.key}:`,
        ...listMatches(matches),
        ...otherChanges(result.counts, 'and changed'),
        ...notes.map((n) => `note: ${n}`),
      ].join('\n'),
    );
    return 0;
  },
};
