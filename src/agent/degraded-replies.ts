/**
 * The replies that are not a normal answer (agent.ts, "degradation, never a crash"): what the
 * person reads when their message cannot be read, when the model does not answer or answers
 * nothing, and when something on our side fails; and the empty reply those carry.
 */
import type { AgentReply } from './agent';

/** What the person reads when the model cannot be reached. */
export const LLM_UNAVAILABLE_TEXT =
  "I can't think right now: my language model is not answering. I saved your message and will remember it; please try again in a little while.";
export const INVALID_MESSAGE_TEXT = 'I could not read that message, sorry.';
export const INTERNAL_ERROR_TEXT = 'Something went wrong on my side while answering; your message may not have been saved. Please try again.';
export const EMPTY_ANSWER_TEXT = 'Sorry, I lost my train of thought. Could you say that again?';

/** A reply that stored, showed and reported nothing, except what `extra` says. */
export function emptyReply(text: string, extra: Partial<AgentReply> = {}): AgentReply {
  return {
    text,
    conversationId: null,
    episodeIds: { user: null, reply: null, notes: [] },
    tokens: null,
    reported: { inputTokens: 0, outputTokens: 0, calls: 0 },
    memoryIds: [],
    toolCalls: [],
    ...extra,
  };
}
