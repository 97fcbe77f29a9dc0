/**
 * Taking a person's message into the scope's conversation, before any model call: the
 * conversation is opened (an idle one is ended first), the message is stored as a turn, and a
 * message stored before is told apart: a redelivery gets no answer (or, resumed after a crash,
 * the reply stored after it), while one whose earlier attempt died before replying is answered
 * now. A message that cannot be stored is the person's mistake and gets the reply saying so.
 */
import type { ConversationStore, WorkingMemory } from '../memory/conversations/conversation-store';
import type { Episode } from '../memory/episodes/episode-service';
import type { Scope } from '../memory/records';
import type { ScopePolicy } from '../memory/scopes/scope-policy';
import { ValidationError } from '../shared/errors';
import type { AgentReply } from './agent';
import type { ConversationClosing } from './conversation-closing';
import { emptyReply, INVALID_MESSAGE_TEXT } from './degraded-replies';
import { contentOf, contextMetadata, type InboundMessage } from './inbound-message';
import type { TurnParts } from './turn-parts';

/** The turns of a conversation as the store reads them. */
export type Turns = Awaited<ReturnType<ConversationStore['recentTurns']>>;

/** A message taken in: the working memory that now holds it, its episode and the turns to answer with. */
export interface TakenIn {
  readonly memory: WorkingMemory;
  readonly userEpisode: Episode;
  readonly turns: Turns;
}

/** Either the message is taken in and is to be answered, or `reply` is all there is to say. */
export type Intake = { readonly taken: TakenIn } | { readonly reply: AgentReply };

/**
 * The episode input of a person's message in conversation `conversationId`. `metadata` comes
 * first (what the caller knows of the message), then the author, the chat's context and attachments.
 */
export function userTurnInput(message: InboundMessage, conversationId: string, metadata: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    role: 'user',
    content: contentOf(message),
    author: message.authorName ?? null,
    channel: message.channel,
    timestamp: message.timestamp.toISOString(),
    externalId: message.externalId,
    conversationId,
    metadata: {
      ...metadata,
      ...(message.authorId && { authorId: message.authorId }),
      ...contextMetadata(message),
      ...(message.attachments?.length && { attachments: message.attachments }),
    },
  };
}

/**
 * For a message stored by an earlier attempt (resumed after a crash): the reply stored right
 * after it, when there is one; or the turns to answer it with, when it is the conversation's
 * last turn (no reply was stored). Undefined when it is not among the open conversation's turns.
 */
async function unansweredOrStoredReply(
  store: ConversationStore,
  memory: WorkingMemory,
  userEpisodeId: string,
): Promise<{ reply?: string; replyId?: string; turns: Turns } | undefined> {
  const turns = await store.recentTurns(memory);
  const at = turns.findIndex((t) => t.id === userEpisodeId);
  if (at < 0) return undefined;
  const next = turns[at + 1];
  if (!next) return { turns };
  return next.role === 'agent' ? { reply: next.content, replyId: next.id, turns } : undefined;
}

/** Opens the scope's conversation for a message at `now`, ending it first when it sat idle too long. */
async function openConversation(parts: TurnParts, closing: ConversationClosing, scope: Scope, now: Date, policy: ScopePolicy): Promise<WorkingMemory> {
  const { store, settings } = parts;
  const memory = await store.open(scope.id, now);
  if (
    settings.idleEndMinutes > 0 &&
    memory.state.recentTurnIds.length > 0 &&
    now.getTime() - memory.lastActivityAt.getTime() >= settings.idleEndMinutes * 60_000
  ) {
    await closing.endOpen(scope, memory, 'idle', now, policy);
    return store.open(scope.id, now);
  }
  return memory;
}

/** Takes `message` into the conversation of `scope` (see the file's header). */
export async function takeIn(
  parts: TurnParts,
  closing: ConversationClosing,
  turn: { readonly scope: Scope; readonly message: InboundMessage; readonly now: Date; readonly policy: ScopePolicy; readonly resume: boolean },
): Promise<Intake> {
  const { store, log } = parts;
  const { scope, message, now } = turn;
  let memory = await openConversation(parts, closing, scope, now, turn.policy);
  let stored: Awaited<ReturnType<TurnParts['episodes']['recordTurn']>>;
  try {
    stored = await parts.episodes.recordTurn(scope.id, userTurnInput(message, memory.conversationId), message.channel);
  } catch (error) {
    // The message cannot be stored (empty once control characters are removed, over
    // EPISODE_MAX_BYTES, ...): the person's mistake, said as such, not a failure of ours.
    if (!(error instanceof ValidationError)) throw error;
    log.warn('message refused; not answered', { scope: scope.key, code: error.code, reason: error.message });
    return { reply: emptyReply(`${INVALID_MESSAGE_TEXT} (${error.message})`, { degraded: 'invalid_message', conversationId: memory.conversationId }) };
  }
  // The held turns plus every later turn of the conversation: this message, and any a crash
  // left stored but unrecorded in the state.
  let turns: Turns | undefined;
  if (stored.duplicate || !stored.episode) {
    const again = turn.resume && stored.episode ? await unansweredOrStoredReply(store, memory, stored.episode.id) : undefined;
    if (again?.reply !== undefined)
      return {
        reply: emptyReply(again.reply, {
          duplicate: true,
          conversationId: memory.conversationId,
          episodeIds: { user: stored.episode?.id ?? null, reply: again.replyId ?? null, notes: [] },
        }),
      };
    if (!again) {
      log.info('message already handled (same external id); not answered again', { scope: scope.key, externalId: message.externalId });
      return {
        reply: emptyReply('', {
          duplicate: true,
          conversationId: memory.conversationId,
          episodeIds: { user: stored.episode?.id ?? null, reply: null, notes: [] },
        }),
      };
    }
    log.info('message stored by an attempt that did not finish; answering it now', { scope: scope.key, externalId: message.externalId });
    turns = again.turns;
  }
  const userEpisode = stored.episode!;
  turns ??= await store.recentTurns(memory);
  memory = {
    ...memory,
    lastActivityAt: now,
    state: { ...memory.state, recentTurnIds: turns.map((t) => t.id), lastTurn: Math.max(memory.state.lastTurn, ...turns.map((t) => t.turn ?? -1)) },
  };
  return { taken: { memory, userEpisode, turns } };
}
