/**
 * One reply, from a message already on its scope's lane to the answer: the message is taken in
 * (`turn-intake.ts`); past a reply limit it is stored and not answered; otherwise the prompt is
 * assembled, the model answers with the memory tools bound to this scope, and the reply is
 * stored as an agent episode listing the memories it was shown (`metadata.injectedMemoryIds`, so
 * sleep does not learn them back from the reply); the working memory is updated and compacted
 * when the working context reaches the threshold. One log line per reply states the tokens of
 * each part, estimated, beside what the model reported.
 */
import { LlmError } from '../llm/language-model';
import type { WorkingMemory } from '../memory/conversations/conversation-store';
import type { Episode } from '../memory/episodes/episode-service';
import { looksLikeInjection } from '../memory/memories/memory-guards';
import type { Scope } from '../memory/records';
import type { ScopePolicy } from '../memory/scopes/scope-policy';
import type { AgentReply } from './agent';
import type { CompactionOutcome } from './compaction';
import type { ConversationClosing } from './conversation-closing';
import { EMPTY_ANSWER_TEXT, emptyReply, LLM_UNAVAILABLE_TEXT } from './degraded-replies';
import { contentOf, scopeOf, type InboundMessage } from './inbound-message';
import type { ReplyPrompt } from './reply-prompt';
import type { ConversationOutcome } from './tool-rounds';
import { takeIn, type TakenIn } from './turn-intake';
import type { TurnParts } from './turn-parts';

/** Answers one message of `scope`; the caller holds the scope's lane. */
export type ReplyTurn = (scope: Scope, message: InboundMessage, resume?: boolean) => Promise<AgentReply>;

/** What the model reported for all calls of a reply. */
type Reported = AgentReply['reported'];

/** The reply's episode stored, and the working memory that now holds it. */
interface RecordedReply {
  readonly memory: WorkingMemory;
  readonly replyEpisode: Episode;
  readonly usedTokens: number;
}

/** Stores the reply as an agent episode and the working memory that holds it. */
async function recordReply(
  parts: TurnParts,
  scope: Scope,
  message: InboundMessage,
  taken: TakenIn,
  answer: { text: string; built: ReplyPrompt['built']; shownInSoul: readonly string[]; outcome: ConversationOutcome; reported: Reported; now: Date },
): Promise<RecordedReply> {
  const { built, outcome, now } = answer;
  const { estimator } = parts;
  const replyAt = new Date(Math.max(now.getTime(), message.timestamp.getTime() + 1));
  const reply = await parts.episodes.recordTurn(
    scope.id,
    {
      role: 'agent',
      content: answer.text,
      author: parts.agentName,
      channel: message.channel,
      timestamp: replyAt.toISOString(),
      conversationId: taken.memory.conversationId,
      metadata: {
        kind: 'reply',
        injectedMemoryIds: [...built.memoryIds, ...answer.shownInSoul],
        ...(outcome.called.length > 0 && { toolsUsed: outcome.called }),
        tokens: { estimated: built.tokens.prompt, reported: answer.reported.inputTokens },
      },
    },
    message.channel,
  );
  const replyEpisode = reply.episode!;
  const allTurns = [...taken.turns, replyEpisode];
  const fixed = built.tokens.prompt - built.tokens.recent;
  const usedTokens =
    fixed +
    allTurns.reduce((s, e) => s + estimator.message({ role: e.role === 'agent' ? 'assistant' : 'user', content: e.content }), 0) +
    built.tokens.reserved;
  const memory: WorkingMemory = {
    ...taken.memory,
    state: {
      ...taken.memory.state,
      recentTurnIds: [...taken.memory.state.recentTurnIds, replyEpisode.id],
      lastTurn: Math.max(taken.memory.state.lastTurn, replyEpisode.turn ?? -1),
      lastContextTokens: usedTokens,
    },
  };
  await parts.store.save(memory);
  return { memory, replyEpisode, usedTokens };
}

/** Compacts the working context when it reached the threshold; a failure keeps the turns in full. */
async function compactIfDue(parts: TurnParts, scope: Scope, recorded: RecordedReply, now: Date): Promise<CompactionOutcome['status'] | undefined> {
  if (!parts.compactor.due(recorded.memory, recorded.usedTokens, now, false)) return undefined;
  try {
    return (await parts.compactor.compact(recorded.memory, now)).status;
  } catch (error) {
    parts.log.error('compaction failed; the turns stay in full', { scope: scope.key, error });
    return 'cancelled';
  }
}

/** Past a reply limit: the message stays stored and in the working memory, and the limit's reply is all there is. */
async function limitedReply(parts: TurnParts, scope: Scope, policy: ScopePolicy, taken: TakenIn, now: Date): Promise<AgentReply | undefined> {
  const limited = await parts.limits.check(scope, policy, now);
  if (!limited) return undefined;
  await parts.store.save(taken.memory);
  parts.log.warn('reply limit reached; message stored, not answered', {
    scope: scope.key,
    reason: limited.reason,
    until: limited.until.toISOString(),
    told: limited.text !== '',
  });
  return emptyReply(limited.text, {
    degraded: 'reply_limit',
    conversationId: taken.memory.conversationId,
    episodeIds: { user: taken.userEpisode.id, reply: null, notes: [] },
  });
}

/** Builds the reply turn on the agent's parts (see the file's header). */
export function createReplyTurn(parts: TurnParts, closing: ConversationClosing): ReplyTurn {
  const { store, log, estimator } = parts;

  return async function handleOne(scope, message, resume = false) {
    const started = performance.now();
    const now = parts.clock();
    const policy = parts.policyOf(scope);
    const intake = await takeIn(parts, closing, { scope, message, now, policy, resume });
    if ('reply' in intake) return intake.reply;
    const { userEpisode, turns } = intake.taken;
    let memory = intake.taken.memory;
    // Stored, and in the working memory for the next reply; but no model call past a reply limit.
    const limited = await limitedReply(parts, scope, policy, intake.taken, now);
    if (limited) return limited;
    const content = contentOf(message);
    const showAuthors = message.scopeKind === 'group';
    const { built, memories, shownInSoul, goals, notes } = await parts.prompts.assemble({ scope, policy, memory, content, turns, now, showAuthors });
    memory = { ...memory, state: { ...memory.state, goals } };

    // A message that tries to instruct the memory system anywhere in what the model reads: no memory writes this reply.
    const instructionInContext = turns.some((t) => t.role === 'user' && looksLikeInjection(t.content)) || memories.some((m) => looksLikeInjection(m.text));
    const bound = parts.tools.bind({
      scopeId: scope.id,
      scope: scopeOf(message),
      channel: message.channel,
      userEpisodeId: userEpisode.id,
      now,
      timeZone: policy.timeZone,
      instructionInContext,
    });
    let outcome: ConversationOutcome;
    try {
      outcome = await parts.converse(built.system, built.messages, bound, scope.id, built.stableLength);
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      log.warn('the model is unavailable; told the person, their message is stored', { scope: scope.key, reason: error.reason, error });
      await store.save(memory);
      return emptyReply(LLM_UNAVAILABLE_TEXT, {
        degraded: 'llm_unavailable',
        conversationId: memory.conversationId,
        tokens: built.tokens,
        memoryIds: built.memoryIds,
        episodeIds: { user: userEpisode.id, reply: null, notes: [] },
      });
    }
    const text = outcome.text || EMPTY_ANSWER_TEXT;
    const reported = outcome.responses.reduce(
      (r, x) => ({ inputTokens: r.inputTokens + x.usage.inputTokens, outputTokens: r.outputTokens + x.usage.outputTokens, calls: r.calls + 1 }),
      { inputTokens: 0, outputTokens: 0, calls: 0 },
    );
    const recorded = await recordReply(parts, scope, message, { memory, userEpisode, turns }, { text, built, shownInSoul, outcome, reported, now });
    memory = recorded.memory;

    log.info('reply', {
      scope: scope.key,
      conversationId: memory.conversationId,
      ms: Math.round(performance.now() - started),
      tokens: built.tokens,
      estimatedInput: built.tokens.prompt,
      reportedInput: reported.inputTokens,
      reportedOutput: reported.outputTokens,
      calls: reported.calls,
      family: estimator.family,
      memories: built.memoryIds.length,
      omittedTurns: built.omittedTurns,
      tools: outcome.called,
      notes,
    });

    const compaction = await compactIfDue(parts, scope, recorded, now);
    return {
      text,
      conversationId: memory.conversationId,
      episodeIds: {
        user: userEpisode.id,
        reply: recorded.replyEpisode.id,
        notes: outcome.results.map((r) => r.noteEpisodeId).filter((id): id is string => id !== undefined),
      },
      tokens: built.tokens,
      reported,
      memoryIds: [...built.memoryIds, ...shownInSoul],
      toolCalls: outcome.called,
      compaction,
    };
  };
}
