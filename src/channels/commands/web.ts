/**
 * `/web` in every channel (the wording; the channels show it): a single-use link to the memory
 * page in a browser (memory/web/web-sessions.ts), for the scope the chat speaks into and the
 * identity that asked. Not in a group: the link would be shown to everyone there, and whoever
 * opened it first would hold the group's page; a group's page opens from `/memory` inside
 * Telegram, which checks membership on every request.
 */
import { WEB_LINK_TTL_MS, webLoginUrl, type WebSessions } from '../../memory/web/web-sessions';

/** What `/web` needs: the links, and where people reach the page (PUBLIC_URL). */
export interface WebLinkServices {
  readonly sessions: Pick<WebSessions, 'issueLink'>;
  readonly publicUrl: string;
}

/** What a channel without the memory page answers (the admin API, which serves it, is off). */
export const WEB_UNAVAILABLE_TEXT = 'The memory page is not served here (the operator sets ADMIN_TOKEN to serve it).';

/** What `/web` answers in a group. */
export const WEB_IN_GROUP_TEXT =
  'A browser link shown here would open this group’s memory for whoever clicks it first: send /web to me in a private chat, or open the group’s page with /memory.';

/** The answer to `/web`: a fresh link, valid once within ten minutes. */
export async function answerWeb(
  services: WebLinkServices | undefined,
  target: { scopeId: string; identityKey: string; group: boolean },
  reason: string,
): Promise<string> {
  if (!services) return WEB_UNAVAILABLE_TEXT;
  if (target.group) return WEB_IN_GROUP_TEXT;
  const issued = await services.sessions.issueLink({ scopeId: target.scopeId, identityKey: target.identityKey }, { now: new Date(), reason });
  return [
    `Your memory page: ${webLoginUrl(services.publicUrl, issued.token)}`,
    `Open it within ${WEB_LINK_TTL_MS / 60_000} minutes; it works once and keeps that browser signed in for the day. Do not share it: it shows everything I remember about you.`,
  ].join('\n');
}
