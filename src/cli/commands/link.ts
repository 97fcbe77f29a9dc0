/**
 * `link`: the operator's door to linking identities (docs/channels.md, "Linking"), the same
 * domain verbs as `/link` and `/unlink` in a chat and the admin API's `/links`:
 *
 * - `link list`: every identity that speaks into another scope, and its state;
 * - `link join IDENTITY INTO`: IDENTITY (a scope key such as `terminal:alice`) speaks into INTO
 *   (an identity, scope key or scope id) from now on; its own scope is merged into INTO's;
 * - `link unlink IDENTITY`: its new messages stay in its own scope again (what was merged stays);
 * - `link resume`: completes merges a crash interrupted (`npm start` does it on start too);
 * - `link code IDENTITY` / `link redeem IDENTITY CODE`: the one-time code, as a chat asks for and uses it.
 */
import { ValidationError } from '../../shared/errors';
import { normalizeScopeKey } from '../../memory/scopes/scope-key';
import type { ScopeDescriptor } from '../../memory/scopes/scope-directory';
import { writeResult, type CommandRunner } from '../command';

/** An identity named on the command line: its channel is its key's first part; a Telegram group is a group. */
function identityOf(key: string | undefined, usage: string): ScopeDescriptor {
  if (!key) throw new ValidationError(`usage: ${usage}`, { code: 'cli.usage' });
  const normalized = normalizeScopeKey(key, 'cli.usage');
  const channel = normalized.split(':')[0] ?? normalized;
  return { key: normalized, channel, ...(normalized.startsWith('telegram:group:') && { kind: 'group' }) };
}

export const linkCommand: CommandRunner = {
  async run(ctx) {
    const [verb, first, second] = ctx.positionals;
    const core = await ctx.core();
    const now = new Date();
    switch (verb) {
      case 'list': {
        const links = await core.identities.list();
        const text = links.length === 0 ? 'no linked identities' : links.map((l) => `${l.identityKey} -> ${l.scopeKey ?? l.scopeId} (${l.state})`).join('\n');
        writeResult(ctx, { links }, text);
        return 0;
      }
      case 'join': {
        const identity = identityOf(first, ctx.usage);
        if (!second) throw new ValidationError(`usage: ${ctx.usage}`, { code: 'cli.usage' });
        const joined = await core.identities.join(identity.key, second, { now, reason: 'joined from the command line' });
        const moved = joined.merge?.moved ?? {};
        writeResult(
          ctx,
          { identity: identity.key, scope: joined.scope.key, merge: joined.merge },
          `${identity.key} now speaks into ${joined.scope.key} (moved ${moved.episodes ?? 0} episodes, ${moved.memories ?? 0} memories; folded ${joined.merge?.foldedMemories ?? 0})`,
        );
        return 0;
      }
      case 'unlink': {
        const identity = identityOf(first, ctx.usage);
        const done = await core.identities.unlink(identity.key, { now, reason: 'unlinked from the command line' });
        writeResult(
          ctx,
          { identity: identity.key, unlinked: done },
          done ? `${identity.key} speaks into its own scope again (what was merged stays)` : `${identity.key} was not linked`,
        );
        return 0;
      }
      case 'resume': {
        const count = await core.identities.resumeMerges({ now });
        writeResult(ctx, { resumed: count }, count === 0 ? 'no interrupted merge' : `completed ${count} interrupted merge${count === 1 ? '' : 's'}`);
        return 0;
      }
      case 'code': {
        const issued = await core.linkCodes.issue(identityOf(first, ctx.usage), { now, reason: 'asked for from the command line' });
        writeResult(
          ctx,
          { code: issued.code, expiresAt: issued.expiresAt.toISOString() },
          `${issued.code} (valid until ${issued.expiresAt.toISOString()}, once)`,
        );
        return 0;
      }
      case 'redeem': {
        const identity = identityOf(first, ctx.usage);
        if (!second) throw new ValidationError(`usage: ${ctx.usage}`, { code: 'cli.usage' });
        const joined = await core.linkCodes.redeem(identity, second, { now, reason: 'redeemed from the command line' });
        writeResult(ctx, { identity: identity.key, scope: joined.scope.key, merge: joined.merge }, `${identity.key} now speaks into ${joined.scope.key}`);
        return 0;
      }
      default:
        throw new ValidationError(`usage: ${ctx.usage}`, { code: 'cli.usage' });
    }
  },
};
