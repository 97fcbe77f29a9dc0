/**
 * The MCP server over Streamable HTTP, one request at a time: each POST gets a server bound to the
 * scope its caller was allowed (the admin API decided it from the bearer token) and a stateless
 * transport answering in JSON. Nothing lives between requests but the forget previews, which the
 * listener's book holds, so any request of the same scope may confirm a preview.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Scope } from '../memory/records';
import { createMemoryMcpServer, type McpDoorServices } from './memory-server';

/** Answers one MCP request (already authenticated, body already parsed) for `scope`. */
export async function handleMcpRequest(
  services: McpDoorServices,
  scope: Scope,
  request: IncomingMessage,
  response: ServerResponse,
  body: unknown,
): Promise<void> {
  const server = createMemoryMcpServer(services, scope);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  response.on('close', () => {
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  });
  await server.connect(transport);
  await transport.handleRequest(request, response, body);
}
