/**
 * When the agent answers in a group: `mentions` (the default) — only when it is mentioned
 * (@its name), replied to (a reply to one of its messages) or sent a command; `all` — every
 * message it can read. Either way every message of the group is stored (the group's memory).
 * Kept in `Scope.settings.groupReplies`; set by a group's administrator with `/replies` or by the
 * operator with `npm run cli -- replies`.
 */
export const GROUP_REPLIES = ['mentions', 'all'] as const;
export type GroupReplies = (typeof GROUP_REPLIES)[number];

export const DEFAULT_GROUP_REPLIES: GroupReplies = 'mentions';

export function isGroupReplies(value: unknown): value is GroupReplies {
  return typeof value === 'string' && (GROUP_REPLIES as readonly string[]).includes(value);
}

/** The scope's setting (the default when unset or unreadable). */
export function groupRepliesOf(scope: { readonly settings: unknown }): GroupReplies {
  const settings = scope.settings;
  const value = settings && typeof settings === 'object' && !Array.isArray(settings) ? (settings as Record<string, unknown>).groupReplies : undefined;
  return isGroupReplies(value) ? value : DEFAULT_GROUP_REPLIES;
}
