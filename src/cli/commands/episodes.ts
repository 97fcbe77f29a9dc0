/**
 * `episodes --scope S [--since ISO] [--limit N] [--json]`: the stored episodes of one scope,
 * oldest first (with --since, from that time on; without it, the latest N).
 */
import type { Episode } from '../../memory/records';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

/** The public shape of an episode in CLI and API output. */
export function episodeToJson(episode: Episode, scopeKey: string) {
  return {
    id: episode.id,
    scope: scopeKey,
    externalId: episode.externalId,
    channel: episode.channel,
    role: episode.role,
    author: episode.author,
    content: episode.content,
    timestamp: episode.timestamp.toISOString(),
    conversationId: episode.conversationId,
    metadata: episode.metadata,
    importance: episode.importance,
    consolidated: episode.consolidated,
  };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export const episodesCommand: CommandRunner = {
  async run(ctx) {
    const since = ctx.values.since === undefined ? undefined : new Date(ctx.values.since as string);
    if (since && Number.isNaN(since.getTime()))
      throw new ValidationError('--since must be an ISO 8601 date, e.g. 2024-05-01 or 2024-05-01T12:00:00Z', { code: 'cli.usage' });
    const limit = ctx.values.limit === undefined ? 50 : Number(ctx.values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
      throw new ValidationError('--limit must be a whole number from 1 to 100000', { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'episodes');
    const key = scope.key;
    const episodes = await core.episodeLog.list(scope.id, { since, limit });
    writeResult(
      ctx,
      { scope: key, episodes: episodes.map((episode) => episodeToJson(episode, key)) },
      episodes.length === 0
        ? `no episodes in ${key}${since ? ` since ${since.toISOString()}` : ''}`
        : episodes
            .map(
              (e) =>
                `${e.timestamp.toISOString().replace('T', ' ').slice(0, 19)}  ${e.role.padEnd(6)} ${e.author ? `${e.author}: ` : ''}${oneLine(e.content, 160)}`,
            )
            .join('\n'),
    );
    return 0;
  },
};
