/**
 * `/replies` in a group: says when the bot answers there, and lets the group's administrators
 * change it (`/replies mentions`, the default: only when mentioned, replied to or sent a command;
 * `/replies all`: every message it can read). Stored in the group scope's settings
 * (src/memory/scopes/group-replies.ts); the operator sets the same with `npm run cli -- replies`.
 */
import type { Composer } from 'grammy';
import { isGroupReplies, type GroupReplies } from '../../memory/scopes/group-replies';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

const ADMIN_STATUSES = new Set(['creator', 'administrator']);

/** What the bot says about a group's setting. */
export function groupRepliesText(mode: GroupReplies): string {
  return mode === 'all'
    ? 'In this group I answer every message I can read. Everything said here is remembered as the group’s.'
    : 'In this group I answer only when someone mentions me, replies to one of my messages or sends me a command. Everything said here is still remembered as the group’s.';
}

export const REPLIES_USAGE = 'A group administrator can change it: /replies mentions (the default) or /replies all.';
export const REPLIES_PRIVATE_TEXT = 'This setting is for groups. Here, in our private chat, I answer every message.';
export const REPLIES_NOT_ADMIN_TEXT = 'Only the group’s administrators can change when I answer here.';

export function registerGroupCommands(composer: Composer<NocturneContext>, deps: { directory: Pick<ScopeDirectory, 'setGroupReplies'> }): void {
  composer.command('replies', async (ctx) => {
    if (ctx.chat.type === 'private') {
      await sendText(ctx.api, ctx.chat.id, REPLIES_PRIVATE_TEXT);
      return;
    }
    const wanted = ctx.match.trim().toLowerCase();
    if (wanted === '') {
      await sendText(ctx.api, ctx.chat.id, `${groupRepliesText(ctx.scope.groupReplies)}\n\n${REPLIES_USAGE}`);
      return;
    }
    if (!isGroupReplies(wanted)) {
      await sendText(ctx.api, ctx.chat.id, `I do not know “${wanted}”. ${REPLIES_USAGE}`);
      return;
    }
    const member = await ctx.getChatMember(ctx.from!.id);
    if (!ADMIN_STATUSES.has(member.status)) {
      await sendText(ctx.api, ctx.chat.id, REPLIES_NOT_ADMIN_TEXT);
      return;
    }
    await deps.directory.setGroupReplies(ctx.scope.id, wanted);
    await sendText(ctx.api, ctx.chat.id, `Done. ${groupRepliesText(wanted)}`);
  });
}
