/**
 * An edit of a message by the person who wrote it (Telegram's `edited_message`, a webhook message
 * sent again with `edit: true`): the new text replaces the old one everywhere the message lives,
 * like a forget of the old words, inside the forget service's transaction (forget-service.ts
 * `editEpisode` runs this work, then the same after-commit steps a forget runs: the full-text
 * index purged and checkpointed, the old vector deleted, export files scrubbed before the commit).
 *
 * What changes, and why:
 * - the episode: its content and hash; the model's summary of it, its tags and the people and
 *   things observed in it go (they were read from the old words; the next sleep reads the new
 *   ones); its metadata loses any string holding an old-only word and records the edit (when,
 *   how many times; never the old text);
 * - it is pending again (`consolidated` false, attempts reset): the next sleep reads the new text,
 *   with the memories learned from the old text shown beside it (consolidator.ts), so the model
 *   can update or supersede them. Those memories are not changed here: what they say was learned,
 *   and whether the edit undoes it is the model's call at sleep, recorded in the audit;
 * - its vector: a tombstone deletes the old text's vector after the commit, and the embedding
 *   worker embeds the new text (`embeddedWith` cleared);
 * - replies to it keep their quote of the message answered (`replyToText`) up to date;
 * - the running summary of its conversation, when it holds a word only the old text had, goes
 *   (a summary cannot be partly unsaid; the turns stay);
 * - export files: the forget's export scrub takes out what the scope's export no longer gives (the
 *   old line of the message), see export-gone.ts.
 *
 * Other messages that share a word with the old text are the person's own words and stay.
 */
import type { Prisma } from '../../storage/prisma';
import { queryTerms } from '../../storage/full-text';
import { EDITED, REPLY_TO, REPLY_TO_TEXT, replyQuote } from '../episodes/message-context';
import { writeTombstones } from '../vectors/tombstones';
import { withoutWords } from './forget-words';
import { FORGOTTEN_TEXT, forgetObservationsOf, jsonObject, type Tx } from './redact-derived';
import { containsWord, holdsAll, wordsOf } from './text-match';

/** The new text of a message, already normalized and sized like any message (episode-service.ts). */
export interface EpisodeEdit {
  /** The channel's id of the message edited (the episode's `externalId`). */
  readonly externalId: string;
  readonly content: string;
  readonly contentHash: string;
  /** When the person edited it (the channel's time, else now). */
  readonly editedAt: Date;
  /** Where the edit came from, for the audit (`telegram`, `webhook`). */
  readonly channel: string;
}

/** What an edit did, or why it did nothing. */
export type EditOutcome =
  | { readonly status: 'edited'; readonly episodeId: string; readonly removedWords: number; readonly memoriesToRecheck: readonly string[] }
  /** The text is the same (an edit of formatting or of a link preview only). */
  | { readonly status: 'unchanged'; readonly episodeId: string }
  /** No message of the person's under that id in the scope. */
  | { readonly status: 'not_found' }
  /** The message was forgotten at the owner's request: an edit does not bring it back. */
  | { readonly status: 'forgotten'; readonly episodeId: string };

/** The audit action of an edit (subject: the episode). */
export const EDIT_ACTION = 'edit';

/**
 * The words of `before` that `after` no longer has (as search reads words: folded, stemmed,
 * stopwords left out): what the edit takes back.
 */
export function removedTerms(before: string, after: string): string[] {
  const kept = wordsOf(after);
  return queryTerms(before).filter((term) => !containsWord(kept, term));
}

/** A matcher for what an edit takes back: a text holding any one of the removed words. */
export function holdsAnyOf(terms: readonly string[]): (text: string) => boolean {
  return (text) => terms.some((term) => holdsAll(text, [term]));
}

/** Replies of the scope quoting the edited message get the new quote. */
async function refreshQuotes(tx: Tx, scopeId: string, externalId: string, since: Date, content: string): Promise<void> {
  const later = await tx.episode.findMany({ where: { scopeId, role: 'user', timestamp: { gte: since } }, select: { id: true, metadata: true } });
  for (const e of later) {
    const metadata = jsonObject(e.metadata);
    if (metadata[REPLY_TO] !== externalId || metadata[REPLY_TO_TEXT] === undefined) continue;
    const updated = { ...metadata, [REPLY_TO_TEXT]: replyQuote(content) } as Prisma.InputJsonObject;
    await tx.episode.update({ where: { id: e.id }, data: { metadata: updated } });
  }
}

/** Reads the episode an edit names: the person's message under that external id, or null. */
export function findEdited(tx: Tx, scopeId: string, externalId: string) {
  return tx.episode.findFirst({ where: { scopeId, externalId, role: 'user' } });
}

/**
 * The edit's work in the forget transaction (see the module comment). `holds` is what the export
 * scrub takes out besides what the scope's export no longer gives: a line or string quoting the
 * old text whole. Not every line with an old-only word: those may be other messages of the person.
 */
export async function applyEdit(tx: Tx, scopeId: string, edit: EpisodeEdit, now: Date): Promise<{ outcome: EditOutcome; holds: (text: string) => boolean }> {
  const none = { holds: () => false };
  const episode = await findEdited(tx, scopeId, edit.externalId);
  if (!episode) return { outcome: { status: 'not_found' }, ...none };
  if (episode.content === FORGOTTEN_TEXT) return { outcome: { status: 'forgotten', episodeId: episode.id }, ...none };
  if (episode.content === edit.content) return { outcome: { status: 'unchanged', episodeId: episode.id }, ...none };
  const old = episode.content;
  const removed = removedTerms(old, edit.content);
  const holdsRemoved = holdsAnyOf(removed);

  const metadata = jsonObject(episode.metadata);
  const kept = removed.length > 0 ? (withoutWords(metadata, holdsRemoved) as Record<string, unknown>) : metadata;
  const earlier = jsonObject((metadata[EDITED] ?? null) as Prisma.JsonValue);
  const times = (typeof earlier.times === 'number' ? earlier.times : 0) + 1;
  await tx.episode.update({
    where: { id: episode.id },
    data: {
      content: edit.content,
      contentHash: edit.contentHash,
      summary: null,
      metadata: { ...kept, [EDITED]: { at: edit.editedAt.toISOString(), times } } as Prisma.InputJsonObject,
      consolidated: false,
      consolidatedAt: null,
      consolidationAttempts: 0,
      embeddedWith: null,
    },
  });
  await tx.episodeTag.deleteMany({ where: { scopeId, episodeId: episode.id } });
  await forgetObservationsOf(tx, scopeId, [episode.id]);
  if ((await tx.vectorTombstone.count({ where: { id: episode.id } })) === 0) await writeTombstones(tx, scopeId, 'episode', [episode.id]);
  await refreshQuotes(tx, scopeId, edit.externalId, episode.timestamp, edit.content);

  if (episode.conversationId && removed.length > 0) {
    const conversation = await tx.conversation.findFirst({ where: { scopeId, id: episode.conversationId }, select: { id: true, summary: true } });
    if (conversation?.summary && holdsRemoved(conversation.summary)) await tx.conversation.update({ where: { id: conversation.id }, data: { summary: null } });
  }

  const sources = await tx.memorySource.findMany({ where: { scopeId, episodeId: episode.id }, select: { memoryId: true } });
  const recheck = sources.length
    ? (await tx.memory.findMany({ where: { scopeId, id: { in: sources.map((s) => s.memoryId) }, validTo: null }, select: { id: true } })).map((m) => m.id)
    : [];
  await tx.auditEvent.create({
    data: {
      scopeId,
      action: EDIT_ACTION,
      subjectType: 'episode',
      subjectId: episode.id,
      // Counts and ids only: the old words are what the edit takes back.
      after: { channel: edit.channel, times, removedWords: removed.length, memoriesToRecheck: recheck },
      reason: 'edited by its author; memories learned from it are checked again at the next sleep',
      createdAt: now,
    },
  });
  return {
    outcome: { status: 'edited', episodeId: episode.id, removedWords: removed.length, memoriesToRecheck: recheck },
    holds: (text) => text.includes(old),
  };
}
