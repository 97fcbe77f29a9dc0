/**
 * `/link` and `/unlink` in every channel (the logic and wording; the channels show the text):
 * `/link` answers a one-time code, `/link CODE` in another chat joins this chat to the one that
 * asked for the code (memory/scopes/link-codes.ts), `/unlink` stops this chat's new messages from
 * going to the joined memory. The person is told before and after linking that what is merged
 * stays merged.
 *
 * The identity is the chat's own scope key as its channel names it (`telegram:private:42`,
 * `terminal:alice`), not the scope it resolves to: a code is bound to the identity that asked.
 */
import type { IdentityScopes } from '../../memory/scopes/identity-links';
import type { LinkCodes } from '../../memory/scopes/link-codes';
import type { ScopeDescriptor } from '../../memory/scopes/scope-directory';
import { plural } from '../../shared/plural';

/** The domain services behind `/link` and `/unlink`. */
export interface LinkServices {
  readonly codes: Pick<LinkCodes, 'issue' | 'redeem'>;
  readonly identities: Pick<IdentityScopes, 'unlink'>;
}

/** What a channel without linking answers. */
export const LINK_UNAVAILABLE_TEXT = 'Linking is not available here.';

const MERGE_NOTE =
  'What this chat remembers is merged into the other for good; /unlink later stops new messages from joining, but what was merged stays merged.';

/** The answer to `/link` (a new code) or `/link CODE` (join this chat to the code's chat). */
export async function answerLink(services: LinkServices | undefined, identity: ScopeDescriptor, argument: string): Promise<string> {
  if (!services) return LINK_UNAVAILABLE_TEXT;
  const code = argument.trim();
  if (code === '') {
    const issued = await services.codes.issue(identity, { now: new Date(), reason: 'asked for with /link' });
    return [
      `Your link code: ${issued.code}`,
      `In your other chat (Telegram, the terminal, ...) send /link ${issued.code} within 10 minutes to make both one memory. It works once.`,
      `The other chat's memory is merged into this one for good; /unlink there later stops its new messages from joining, but what was merged stays merged.`,
    ].join('\n');
  }
  const joined = await services.codes.redeem(identity, code, { now: new Date() });
  const moved = joined.merge?.moved ?? {};
  const what = [plural(moved.episodes ?? 0, 'message'), plural(moved.memories ?? 0, 'memory', 'memories')].join(' and ');
  const folded =
    joined.merge && joined.merge.foldedMemories > 0 ? ` (${plural(joined.merge.foldedMemories, 'memory', 'memories')} it already knew were folded in)` : '';
  return [`Linked: this chat now shares one memory with ${joined.scope.title ?? joined.scope.key}. ${what} from here joined it${folded}.`, MERGE_NOTE].join(
    '\n',
  );
}

/** The answer to `/unlink`. */
export async function answerUnlink(services: LinkServices | undefined, identity: ScopeDescriptor): Promise<string> {
  if (!services) return LINK_UNAVAILABLE_TEXT;
  const done = await services.identities.unlink(identity.key, { now: new Date(), reason: 'asked for with /unlink' });
  return done
    ? 'Unlinked: from now on what you say here is remembered on its own. What was merged before stays in the joined memory.'
    : 'This chat is not linked to another.';
}
