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
import { z } from 'zod';
import type { IdentityScopes } from '../memory/scopes/identity-links';
import type { LinkCodes } from '../memory/scopes/link-codes';
import type { ScopeDescriptor } from '../memory/scopes/scope-directory';
import { normalizeScopeKey } from '../memory/scopes/scope-key';
import type { ApiApp } from './api-app';
import { errorResponses, joinResponse, linkCodeResponse, linksResponse, unlinkResponse } from './response-schemas';

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

/** The services the link routes use. */
export interface LinkRouteDeps {
  readonly identities: IdentityScopes;
  readonly codes: LinkCodes;
}

export function registerLinkRoutes(app: ApiApp, deps: LinkRouteDeps): void {
  const { identities, codes } = deps;
  app.get('/links', { schema: { response: { 200: linksResponse, ...errorResponses } } }, async () => ({ links: await identities.list() }));

  app.post('/links', { schema: { body: joinBody, response: { 200: joinResponse, ...errorResponses } } }, async (request) => {
    const body = request.body;
    const joined = await identities.join(identityOf(body.identity).key, body.into, { now: new Date(), reason: 'joined through the admin API' });
    return { identity: body.identity, scope: { id: joined.scope.id, key: joined.scope.key }, merge: joined.merge };
  });

  app.delete('/links/:identity', { schema: { params: identityParams, response: { 200: unlinkResponse, ...errorResponses } } }, async (request) => {
    const { identity: key } = request.params;
    return { identity: key, unlinked: await identities.unlink(identityOf(key).key, { now: new Date(), reason: 'unlinked through the admin API' }) };
  });

  app.post('/links/codes', { schema: { body: codeBody, response: { 200: linkCodeResponse, ...errorResponses } } }, async (request) => {
    const body = request.body;
    const issued = await codes.issue(identityOf(body.identity), { now: new Date(), reason: 'asked for through the admin API' });
    return { code: issued.code, expiresAt: issued.expiresAt.toISOString() };
  });

  app.post('/links/redeem', { schema: { body: redeemBody, response: { 200: joinResponse, ...errorResponses } } }, async (request) => {
    const body = request.body;
    const joined = await codes.redeem(identityOf(body.identity), body.code, { now: new Date(), reason: 'redeemed through the admin API' });
    return { identity: body.identity, scope: { id: joined.scope.id, key: joined.scope.key }, merge: joined.merge };
  });
}
