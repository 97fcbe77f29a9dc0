/** `soul --scope S [--json]`: the agent's profile of a scope's owner, as Markdown (or JSON with its data). */
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

export const soulCommand: CommandRunner = {
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'soul');
    const soul = await core.profiles.soul(scope.id);
    const profile = ctx.json ? await core.profiles.profile(scope.id) : null;
    writeResult(
      ctx,
      { scope: scope.key, soul, version: profile?.version ?? 0, data: profile?.data ?? null, updatedAt: profile?.updatedAt.toISOString() ?? null },
      soul,
    );
    return 0;
  },
};
