/**
 * `replies --scope S [mentions|all]`: when the Telegram bot answers in a group (the group's
 * `/replies`): `mentions` (default) only when mentioned, replied to or commanded; `all` every
 * message. Without a value it prints the current setting. Every group message is stored either way.
 */
import { ValidationError } from '../../shared/errors';
import { GROUP_REPLIES, groupRepliesOf, isGroupReplies } from '../../memory/scopes/group-replies';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

export const repliesCommand: CommandRunner = {
  async run(ctx) {
    const wanted = ctx.positionals[0]?.trim().toLowerCase();
    if (wanted !== undefined && !isGroupReplies(wanted))
      throw new ValidationError(`replies takes ${GROUP_REPLIES.join(' or ')}, not "${wanted}"`, { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'replies');
    if (scope.kind !== 'group') throw new ValidationError(`${scope.key} is not a group: the setting is for group chats`, { code: 'cli.usage' });
    const row = wanted ? await core.directory.setGroupReplies(scope.id, wanted) : scope;
    const mode = groupRepliesOf(row);
    const text = `${scope.key}: ${mode === 'all' ? 'answers every message it can read' : 'answers only when mentioned, replied to or sent a command'} (groupReplies ${mode}); every message is remembered`;
    writeResult(ctx, { scope: scope.key, groupReplies: mode, changed: wanted !== undefined }, text);
    return 0;
  },
};
