/**
 * A channel's door to edits: the person changed a message they sent (Telegram's
 * `edited_message`, a webhook message sent again with `edit: true`). The new text is checked
 * like any message (normalized, sized: a text that would be refused as a message is refused as
 * an edit, the old text kept), then the forget service replaces the old text everywhere
 * (memory/forget/edit-episode.ts). Only the scope the message was sent in is searched, so an
 * edit can never reach another person's messages.
 */
import type { ForgetService } from '../forget/forget-service';
import type { EditOutcome } from '../forget/edit-episode';
import type { ScopeDirectory } from '../scopes/scope-directory';
import type { EpisodeService } from './episode-service';

export type { EditOutcome };

/** An edit as a channel reports it. */
export interface MessageEdit {
  readonly scopeKey: string;
  /** The channel's id of the message edited, as it was stored (`externalId`). */
  readonly externalId: string;
  /** The new text (media described as the channel describes them). */
  readonly text: string;
  readonly editedAt: Date;
  readonly channel: string;
}

export interface EpisodeEdits {
  /** Applies the edit; the outcome says whether a message was found and changed. Throws ValidationError on a text that cannot be stored. */
  edit(edit: MessageEdit): Promise<EditOutcome>;
}

export function createEpisodeEdits(deps: {
  readonly directory: Pick<ScopeDirectory, 'findByKey'>;
  /**
   * The scope a linked identity's (or the owner's other identities') messages went to: the edited
   * message lives there, not in the identity's own scope.
   */
  readonly routedScopeId?: (identityKey: string) => Promise<string | null>;
  readonly episodes: Pick<EpisodeService, 'normalize'>;
  readonly forget: Pick<ForgetService, 'editEpisode'>;
}): EpisodeEdits {
  return {
    async edit(edit) {
      const routed = deps.routedScopeId ? await deps.routedScopeId(edit.scopeKey) : null;
      const scope = routed ? { id: routed } : await deps.directory.findByKey(edit.scopeKey);
      if (!scope) return { status: 'not_found' };
      const normalized = deps.episodes.normalize({ content: edit.text, timestamp: edit.editedAt.toISOString() }, edit.channel);
      return deps.forget.editEpisode(scope.id, {
        externalId: edit.externalId,
        content: normalized.content,
        contentHash: normalized.contentHash,
        editedAt: edit.editedAt,
        channel: edit.channel,
      });
    },
  };
}
