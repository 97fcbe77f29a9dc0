/**
 * The admin API's door to linking identities (docs/api.md, "Linked identities"): the same domain
 * verbs as `/link` in a chat and `cli link`.
 *
 * - `GET /links`: every identity that speaks into another scope, and its state;
 * - `POST /links` `{identity, into}`: the identity speaks into `into` (an identity, scope key or
 *   scope id) from now on; its own scope is merged into that one (re-posting completes a merge a
 *   crash interrupted);
 * - `DELETE /links/:identity`: its new messages stay in its own scope again (what was merged stays);
 * - `POST /links/codes` `{identity}`: a one-time code, as `/link` answers it in that identity's
 *   chat; `POST /links/redeem` `{identity, code}` uses one, as `/link CODE` does.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { IdentityScopes } from '../memory/scopes/identity-links';
import type { LinkCodes } from '../memory/scopes/link-codes';
import type { ScopeDescriptor } from '../memory/scopes/scope-directory';
import { normalizeScopeKey } from '../memory/scopes/scope-key';
import { jsonSchema } from './schemas';

const identity = z.string().min(1).max(200);
const joinBody = z.object({ identity, into: z.string().min(1).max(200) }).strict();
const codeBody = z.object({ identity }).strict();
const redeemBody = z.object({ identity, code: z.string().min(1).max(40) }).strict();
const identityParams = z.object({ identity });

/** An identity named in a request: its channel is its key's first part; a Telegram group is a group. */
function identityOf(key: string): ScopeDescriptor {
  const normalized = normalizeScopeKey(key);
  return { key: normalized, channel: normalized.split(':')[0] ?? normalized, ...(normalized.startsWith('telegram:group:') && { kind: 'group' }) };
}

export function registerLinkRoutes(app: FastifyInstance, deps: { identities: IdentityScopes; codes: LinkCodes }): void {
  const { identities, codes } = deps;
  app.get('/links', async () => ({ links: await identities.list() }));

  app.post('/links', { schema: { body: jsonSchema(joinBody) } }, async (request) => {
    const body = joinBody.parse(request.body ?? {});
    const joined = await identities.join(identityOf(body.identity).key, body.into, { now: new Date(), reason: 'joined through the admin API' });
    return { identity: body.identity, scope: { id: joined.scope.id, key: joined.scope.key }, merge: joined.merge };
  });

  app.delete('/links/:identity', { schema: { params: jsonSchema(identityParams) } }, async (request) => {
    const { identity: key } = identityParams.parse(request.params);
    return { identity: key, unlinked: await identities.unlink(identityOf(key).key, { now: new Date(), reason: 'unlinked through the admin API' }) };
  });

  app.post('/links/codes', { schema: { body: jsonSchema(codeBody) } }, async (request) => {
    const body = codeBody.parse(request.body ?? {});
    const issued = await codes.issue(identityOf(body.identity), { now: new Date(), reason: 'asked for through the admin API' });
    return { code: issued.code, expiresAt: issued.expiresAt.toISOString() };
  });

  app.post('/links/redeem', { schema: { body: jsonSchema(redeemBody) } }, async (request) => {
    const body = redeemBody.parse(request.body ?? {});
    const joined = await codes.redeem(identityOf(body.identity), body.code, { now: new Date(), reason: 'redeemed through the admin API' });
    return { identity: body.identity, scope: { id: joined.scope.id, key: joined.scope.key }, merge: joined.merge };
  });
}
