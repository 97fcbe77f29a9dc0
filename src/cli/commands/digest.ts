/**
 * `digest --scope S [--json]`: builds the digest of everything since the previous one, up to
 * now, and prints it. It is stored like a scheduled digest (so it will be sent, and the next
 * period starts now); asking again in the same instant returns the same digest.
 */
import { digestItems } from '../../memory/digests/digest';
import { writeResult, type Command } from '../command';
import { requireScope } from './scope-option';

export const digestCommand: Command = {
  name: 'digest',
  usage: 'digest --scope S [--json]',
  summary: 'build and print the digest of what was learned since the last one',
  options: { scope: { type: 'string' } },
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'digest');
    const now = new Date();
    const digest = await core.digestBook.build(scope.id, { periodEnd: now, now });
    writeResult(
      ctx,
      {
        scope: scope.key,
        id: digest.id,
        status: digest.status,
        periodStart: digest.periodStart.toISOString(),
        periodEnd: digest.periodEnd.toISOString(),
        items: digestItems(digest),
        content: digest.content,
      },
      digest.status === 'empty' ? `nothing new in ${scope.key} since ${digest.periodStart.toISOString()}` : digest.content,
    );
    return 0;
  },
};
