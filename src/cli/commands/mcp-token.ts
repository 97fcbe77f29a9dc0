/**
 * `mcp-token --scope S [--label L] | --list | --revoke ID|all`: a person's own token for the
 * MCP endpoint of the admin API's listener (`/mcp`), which opens that one scope and nothing else.
 * The token is printed once and stored only as a hash; `--revoke` ends it at its next request.
 */
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

export const mcpTokenCommand: CommandRunner = {
  async run(ctx) {
    const revoke = ctx.values.revoke as string | undefined;
    if ([ctx.values.list === true, revoke !== undefined, ctx.values.label !== undefined].filter(Boolean).length > 1) {
      throw new ValidationError('mcp-token takes one of --label L (issue), --list or --revoke ID|all', { code: 'cli.usage' });
    }
    const { core, scope } = await requireScope(ctx, 'mcp-token');
    if (ctx.values.list === true) {
      const tokens = await core.scopeTokens.list(scope.id);
      writeResult(
        ctx,
        { scope: scope.key, tokens },
        tokens.length === 0 ? `no tokens for ${scope.key}` : tokens.map((t) => `${t.id}  ${t.createdAt}  ${t.label ?? ''}`).join('\n'),
      );
      return 0;
    }
    if (revoke !== undefined) {
      const removed = await core.scopeTokens.revoke(scope.id, revoke.trim(), { reason: 'revoked from the command line' });
      writeResult(
        ctx,
        { scope: scope.key, revoked: removed },
        removed === 0 ? `no token ${revoke} for ${scope.key}` : `revoked ${removed} token(s) of ${scope.key}`,
      );
      return removed === 0 && revoke.trim() !== 'all' ? 2 : 0;
    }
    const issued = await core.scopeTokens.issue(scope.id, { label: ctx.values.label as string | undefined, reason: 'issued from the command line' });
    writeResult(
      ctx,
      { scope: scope.key, ...issued },
      `${issued.token}\n(token ${issued.id} for ${scope.key}: shown once, stored only as a hash; revoke with \`npm run cli -- mcp-token --scope ${scope.key} --revoke ${issued.id}\`)`,
    );
    return 0;
  },
};
