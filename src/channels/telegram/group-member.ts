/**
 * What a member of a group reaches with `/memories` and `/forget`: the memories about them (the
 * ones whose subject they are, or learned from what they said; memory/memories/speakers.ts), so
 * Bo can neither list nor forget what the group learned about Ana. The group's administrators
 * (Telegram's `getChatMember`: creator or administrator) reach all of the group's memories, as
 * they can already decide when the bot answers there (`/replies`). In a private chat the person
 * reaches all of their own scope.
 */
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import type { NocturneContext } from './telegram-context';

const ADMIN_STATUSES = new Set(['creator', 'administrator']);

/** Whose memories a command reaches: a whole scope, or one member's within a group. */
export type MemberReach = { readonly kind: 'all' } | { readonly kind: 'member'; readonly speakerId: string; readonly name: string };

const ALL: MemberReach = { kind: 'all' };

/**
 * The reach of whoever sent this update (a command or a button press): everything in a private
 * chat or for a group's administrator; otherwise the member's own memories. Asks Telegram once
 * per command in a group (the admin list changes outside the bot, so it is not cached).
 */
export async function memberReach(ctx: NocturneContext): Promise<MemberReach> {
  if (ctx.chat?.type === 'private' || !ctx.from) return ALL;
  const member = await ctx.getChatMember(ctx.from.id);
  if (ADMIN_STATUSES.has(member.status)) return ALL;
  const name = [ctx.from.first_name, ctx.from.last_name].filter(Boolean).join(' ') || String(ctx.from.id);
  return { kind: 'member', speakerId: String(ctx.from.id), name };
}

/** The speaker a reach narrows to, or undefined for a whole scope. */
export function speakerOf(reach: MemberReach): string | undefined {
  return reach.kind === 'member' ? reach.speakerId : undefined;
}

/** The catalog as a member sees it: pages and categories of the memories about them only. */
export function catalogFor(catalog: Pick<MemoryCatalog, 'page' | 'categories'>, reach: MemberReach): Pick<MemoryCatalog, 'page' | 'categories'> {
  if (reach.kind === 'all') return catalog;
  return {
    page: (scopeId, query) => catalog.page(scopeId, { ...query, speakerId: reach.speakerId }),
    categories: (scopeId) => catalog.categories(scopeId, reach.speakerId),
  };
}

/** Said above a member's `/memories` in a group, so nobody takes their list for the group's. */
export function memberListHeading(reach: MemberReach): string | undefined {
  if (reach.kind === 'all') return undefined;
  return `What I remember about you, ${reach.name}, from this group (the group’s administrators see everything it taught me):`;
}

/** The answer when a member asks to forget a memory that is about someone else. */
export function notYoursText(n: number): string {
  return `Item ${n} is about someone else: in a group you can make me forget only what I learned about you (the group’s administrators can forget anything).`;
}
