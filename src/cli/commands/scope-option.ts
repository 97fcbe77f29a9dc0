/**
 * The `--scope S` option the memory commands share: a scope's key (as chats and `scopes` print
 * it) or its id. A missing option is a usage error and an unknown scope a not-found error, both
 * exit status 2, with the same wording in every command.
 */
import type { Core } from '../../core';
import type { Scope } from '../../memory/records';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { CommandContext } from '../command';

/** Opens the core and finds the scope named by --scope (a key or an id). */
export async function requireScope(ctx: CommandContext, command: string): Promise<{ core: Core; scope: Scope }> {
  const name = ctx.values.scope as string | undefined;
  if (!name) throw new ValidationError(`${command} needs --scope S (see \`npm run cli -- scopes\`)`, { code: 'cli.usage' });
  const core = await ctx.core();
  const scope = await core.directory.find(name);
  if (!scope) throw new NotFoundError(`no scope "${name}" (see \`npm run cli -- scopes\`)`);
  return { core, scope };
}

/** One line of at most `max` characters. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
