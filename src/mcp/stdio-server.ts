/**
 * The MCP server on stdin/stdout, for an agent on the person's own machine that starts Nocturne
 * as a child process (Claude Desktop, Claude Code, Cursor). stdout is the protocol: nothing else
 * may be written there, so the logger writes to stderr (as everywhere) and `console` output of
 * any library is sent to stderr for as long as the server runs.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Readable, Writable } from 'node:stream';
import type { Scope } from '../memory/records';
import { createMemoryMcpServer, type McpDoorServices } from './memory-server';

/** Serves one scope until the client closes stdin (or `stop` is called); resolves once closed. */
export async function serveStdio(
  services: McpDoorServices,
  scope: Scope,
  io: { input?: Readable; output?: Writable } = {},
): Promise<{ closed: Promise<void>; stop(): Promise<void> }> {
  const input = io.input ?? process.stdin;
  const restoreConsole = consoleToStderr();
  const server = createMemoryMcpServer(services, scope);
  const transport = new StdioServerTransport(input, io.output ?? process.stdout);
  let finish!: () => void;
  const closed = new Promise<void>((resolve) => (finish = resolve));
  const stop = async () => {
    input.off('end', onEnd);
    await server.close().catch(() => undefined);
    restoreConsole();
    finish();
  };
  const onEnd = () => void stop();
  transport.onclose = () => finish();
  input.once('end', onEnd);
  await server.connect(transport);
  services.logger.child({ component: 'mcp' }).info('MCP server on stdio', { scope: scope.key });
  return { closed, stop };
}

/** Points console.log/info/debug at stderr; returns the function that puts them back. */
function consoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  return () => Object.assign(console, saved);
}
