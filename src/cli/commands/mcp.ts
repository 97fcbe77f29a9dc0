/**
 * `mcp --scope S [--create]` (also `npm run -s mcp -- --scope S`): Nocturne's memory of one scope
 * as an MCP server on stdin/stdout, for a desktop agent that starts it (docs/mcp.md). It runs
 * until the client closes stdin. Logs go to stderr; stdout carries only the protocol.
 *
 * The scope must exist (a typo must not start a new, empty memory) unless `--create` is given.
 */
import { MCP_CHANNEL } from '../../mcp/save-statement';
import { serveStdio } from '../../mcp/stdio-server';
import { normalizeScopeKey } from '../../memory/scopes/scope-key';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { mcpServices } from '../../service';
import type { CommandRunner } from '../command';

export const mcpCommand: CommandRunner = {
  async run(ctx) {
    if (ctx.json) throw new ValidationError('mcp speaks the MCP protocol on stdout and has no --json output', { code: 'cli.usage' });
    const name = (ctx.values.scope as string | undefined)?.trim();
    if (!name) throw new ValidationError('mcp needs --scope S (see `npm run cli -- scopes`)', { code: 'cli.usage' });
    const core = await ctx.core();
    let scope = await core.directory.find(name);
    if (!scope && ctx.values.create === true) scope = await core.directory.ensure({ key: normalizeScopeKey(name, 'cli.usage'), channel: MCP_CHANNEL });
    if (!scope) throw new NotFoundError(`no scope "${name}" (see \`npm run cli -- scopes\`, or add --create to start a new one)`);
    // Saved statements get their vectors while the server runs, as under `npm start`.
    core.embeddingWorker.start();
    const served = await serveStdio(mcpServices(core), scope);
    const stop = () => void served.stop();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    try {
      await served.closed;
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    }
    return 0;
  },
};
