/**
 * `web-link --scope S`: a fresh single-use link to the memory page of scope S, as `/web` answers it
 * in a chat (docs/channels.md, "The memory page"): `<PUBLIC_URL>/app/login?t=...`, valid ten
 * minutes, once. The operator's door, and the tests': the page shows that one scope and nothing else.
 */
import { webLoginUrl } from '../../memory/web/web-sessions';
import { writeResult, type Command } from '../command';
import { requireScope } from './scope-option';

export const webLinkCommand: Command = {
  name: 'web-link',
  usage: 'web-link --scope S',
  summary: "print a single-use link (10 minutes) to a scope's memory page in a browser",
  options: { scope: { type: 'string' } },
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'web-link');
    const issued = await core.webSessions.issueLink(
      { scopeId: scope.id, identityKey: scope.key },
      { now: new Date(), reason: 'asked for from the command line' },
    );
    const url = webLoginUrl(ctx.config.web.publicUrl, issued.token);
    writeResult(
      ctx,
      { scope: scope.key, url, expiresAt: issued.expiresAt.toISOString() },
      `${url}\n(opens the memory page of ${scope.key} once, until ${issued.expiresAt.toISOString()})`,
    );
    return 0;
  },
};
