/**
 * `memory_save`: a statement by the person, stored as one of their messages (a `user` episode on
 * the `mcp` channel) so it becomes memory the way every message does, at the next sleep, through
 * the guarded writer: evidence is the person's own turn, and the writer's rules hold there.
 *
 * Two rules are applied at the door as well, because here the text is typed by a client model,
 * not by the person in a chat: a statement that tries to instruct the memory system and one that
 * holds a credential are refused outright (nothing is stored) rather than stored and withheld
 * later. Size and normalization are the episode service's (EPISODE_MAX_BYTES).
 */
import type { EpisodeService } from '../memory/episodes/episode-service';
import { looksLikeInjection } from '../memory/memories/memory-guards';
import type { Scope } from '../memory/records';
import { ValidationError } from '../shared/errors';
import { redactSecrets } from '../shared/redact';

/** The channel MCP statements are stored under (shown in search results and exports). */
export const MCP_CHANNEL = 'mcp';

/** What was stored (or found already stored under the same id). */
export interface SavedStatement {
  readonly saved: boolean;
  readonly duplicate: boolean;
  readonly episodeId: string | null;
  readonly note: string;
}

/** Stores the statement as the person's message, or refuses it with nothing stored (ValidationError). */
export async function saveStatement(
  episodes: Pick<EpisodeService, 'recordTurn'>,
  scope: Scope,
  args: { statement: string; id?: string },
): Promise<SavedStatement> {
  if (looksLikeInjection(args.statement)) {
    throw new ValidationError(
      'memory_save refused: the statement reads as an instruction to the memory system, not as something the ' +
        'person said about themselves; nothing was stored',
      { code: 'mcp.save_injection' },
    );
  }
  if (redactSecrets(args.statement) !== args.statement) {
    throw new ValidationError('memory_save refused: the statement holds what looks like a credential (a key, token or password); nothing was stored', {
      code: 'mcp.save_secret',
    });
  }
  const turn = { role: 'user', content: args.statement, ...(args.id && { externalId: `mcp:${args.id}` }) };
  const result = await episodes.recordTurn(scope.id, turn, MCP_CHANNEL);
  return {
    saved: !result.duplicate,
    duplicate: result.duplicate,
    episodeId: result.episode?.id ?? null,
    note: result.duplicate
      ? 'already saved under this id: nothing new stored'
      : 'stored as a message of the person; it is learned into memory at the next sleep',
  };
}
