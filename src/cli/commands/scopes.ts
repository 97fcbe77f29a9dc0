/** `scopes [--json]`: every scope with its episode and memory counts. */
import { writeResult, type CommandRunner } from '../command';

export const scopesCommand: CommandRunner = {
  async run(ctx) {
    const core = await ctx.core();
    const scopes = await core.directory.list();
    writeResult(
      ctx,
      {
        scopes: scopes.map((s) => ({
          key: s.key,
          id: s.id,
          channel: s.channel,
          kind: s.kind,
          title: s.title,
          episodes: s.episodeCount,
          memories: s.memoryCount,
          lastMessageAt: s.lastMessageAt?.toISOString() ?? null,
          createdAt: s.createdAt.toISOString(),
        })),
      },
      scopes.length === 0
        ? 'no scopes yet (import some episodes: npm run cli -- import --scope me FILE.jsonl)'
        : [
            `${'scope'.padEnd(32)} ${'channel'.padEnd(10)} ${'episodes'.padStart(9)} ${'memories'.padStart(9)}  last message`,
            ...scopes.map(
              (s) =>
                `${s.key.padEnd(32)} ${s.channel.padEnd(10)} ${String(s.episodeCount).padStart(9)} ${String(s.memoryCount).padStart(9)}  ${s.lastMessageAt?.toISOString() ?? '-'}`,
            ),
          ].join('\n'),
    );
    return 0;
  },
};
