/**
 * The `--scope KEY` option the memory commands share: a missing option is a usage error and an
 * unknown key a not-found error, both exit status 2, with the same wording as `episodes`.
 */
import type { Core } from '../../core';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Scope } from '../../storage/prisma';
import type { CommandContext } from '../command';

/** Opens the core and finds the scope named by --scope. */
export async function requireScope(ctx: CommandContext, command: string): Promise<{ core: Core; scope: Scope }> {
  const key = ctx.values.scope as string | undefined;
  if (!key) throw new ValidationError(`${command} needs --scope S (see \`npm run cli -- scopes\`)`, { code: 'cli.usage' });
  const core = await ctx.core();
  const scope = await core.scopes.findByKey(key);
  if (!scope) throw new NotFoundError(`no scope "${key}" (see \`npm run cli -- scopes\`)`);
  return { core, scope };
}

/** One line of at most `max` characters. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
