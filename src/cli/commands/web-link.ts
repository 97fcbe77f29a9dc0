/**
 * `web-link --scope S`: a fresh single-use link to the memory page of scope S, as `/web` answers it
 * in a chat (docs/channels.md, "The memory page"): `<PUBLIC_URL>/app/login?t=...`, valid ten
 * minutes, once. The operator's door, and the tests': the page shows that one scope and nothing else.
 */
import { webLoginUrl } from '../../memory/web/web-sessions';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

export const webLinkCommand: CommandRunner = {
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
