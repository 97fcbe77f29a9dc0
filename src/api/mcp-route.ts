/**
 * `/mcp` on the admin API's listener: the MCP door over Streamable HTTP (src/mcp/). Who may reach
 * which scope is decided here, before any MCP message is read:
 *
 * - a person's token (`npm run cli -- mcp-token --scope S`) opens its own scope and only that one;
 *   naming another scope with it is refused (403), never silently switched;
 * - the admin token opens the scope named by `?scope=KEY` or the `X-Nocturne-Scope` header (a key
 *   or an id), which it must name (400 without it, 404 for no such scope);
 * - anything else is 401, with `WWW-Authenticate: Bearer`.
 *
 * A scope named by the caller is never trusted without a token that allows it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { McpDoorServices } from '../mcp/memory-server';
import type { Scope } from '../memory/records';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import type { ScopeTokens } from '../memory/scopes/scope-tokens';
import { bearerMatches } from './auth';

/** The path of the MCP endpoint. */
export const MCP_PATH = '/mcp';
/** The header an admin names the scope with (the `scope` query parameter works too). */
export const MCP_SCOPE_HEADER = 'x-nocturne-scope';

export interface McpRouteOptions {
  readonly adminToken: string;
  readonly services: McpDoorServices;
  readonly tokens: Pick<ScopeTokens, 'verify'>;
  readonly directory: Pick<ScopeDirectory, 'find'>;
}

/** A JSON-RPC error body, the shape MCP clients read from a refused request. */
function refuse(reply: FastifyReply, status: number, message: string) {
  if (status === 401) void reply.header('www-authenticate', 'Bearer');
  return reply.code(status).send({ jsonrpc: '2.0', error: { code: -32001, message }, id: null });
}

function namedScope(request: FastifyRequest): string | undefined | { conflict: true } {
  const header = request.headers[MCP_SCOPE_HEADER];
  const fromHeader = (Array.isArray(header) ? header[0] : header)?.trim() || undefined;
  const fromQuery = (request.query as { scope?: unknown } | undefined)?.scope;
  const query = typeof fromQuery === 'string' ? fromQuery.trim() || undefined : undefined;
  if (fromHeader && query && fromHeader !== query) return { conflict: true };
  return fromHeader ?? query;
}

/** The scope this request may reach, or the refusal already sent. */
async function allowedScope(request: FastifyRequest, reply: FastifyReply, options: McpRouteOptions): Promise<Scope | undefined> {
  const named = namedScope(request);
  if (typeof named === 'object') {
    await refuse(reply, 400, 'the scope named by the header and by the query differ');
    return undefined;
  }
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization?.trim() ?? '')?.[1]?.trim();
  if (bearer && bearerMatches(request.headers.authorization, options.adminToken)) {
    if (!named) {
      await refuse(reply, 400, `the admin token needs the scope: add ?scope=KEY or the ${MCP_SCOPE_HEADER} header`);
      return undefined;
    }
    const scope = await options.directory.find(named);
    if (!scope) await refuse(reply, 404, `no scope "${named}"`);
    return scope ?? undefined;
  }
  const scope = bearer ? await options.tokens.verify(bearer) : null;
  if (!scope) {
    await refuse(reply, 401, 'missing, wrong or revoked bearer token');
    return undefined;
  }
  if (named && named !== scope.key && named !== scope.id) {
    await refuse(reply, 403, 'this token opens one scope only, and not the one named');
    return undefined;
  }
  return scope;
}

export function registerMcpRoute(app: FastifyInstance, options: McpRouteOptions): void {
  app.post(MCP_PATH, { schema: { hide: true } }, async (request, reply) => {
    const scope = await allowedScope(request, reply, options);
    if (!scope) return reply;
    // The MCP SDK is loaded by the first request here, not with the API: a service no agent talks
    // to over MCP never loads it, and the API answers sooner after a start.
    const { handleMcpRequest } = await import('../mcp/http-handler');
    reply.hijack();
    await handleMcpRequest(options.services, scope, request.raw, reply.raw, request.body);
    return reply;
  });
  // Stateless: no server-sent stream to open (GET) and no session to end (DELETE).
  const notHere = async (request: FastifyRequest, reply: FastifyReply) => {
    const scope = await allowedScope(request, reply, options);
    if (!scope) return reply;
    const error = { code: -32000, message: 'method not allowed: this endpoint is stateless, POST only' };
    return reply.code(405).header('allow', 'POST').send({ jsonrpc: '2.0', error, id: null });
  };
  app.get(MCP_PATH, { schema: { hide: true } }, notHere);
  app.delete(MCP_PATH, { schema: { hide: true } }, notHere);
}
