/**
 * What the model reads for one reply, assembled: the memories and earlier turns retrieval finds
 * for the message (less the turns sent in full as messages, and less the memories the soul
 * states; both sides of a contradiction annotated), the soul cut to SOUL_MAX_TOKENS, the active
 * goals and "now" in the scope's zone, built in seed 000's order within the reply budget
 * (prompt-builder.ts). A message that asks to remember ("do you remember…") also reaches the
 * faded memories, and those the prompt shows are revived (deep recall, docs/agent.md). A part that cannot be read
 * (retrieval, the soul, the goals) is left out with a log line; the reply goes on without it.
 */
import type { Config } from '../config/load-config';
import type { LlmTool } from '../llm/language-model';
import type { ConversationStore, WorkingMemory } from '../memory/conversations/conversation-store';
import { formatLocalMinute } from '../memory/digests/digest';
import type { Episode } from '../memory/episodes/episode-service';
import { withMessageContext } from '../memory/episodes/message-context';
import type { MemoryStore } from '../memory/memories/memory-store';
import type { SoulReader } from '../memory/profiles/soul';
import type { Scope } from '../memory/records';
import type { ScopePolicy } from '../memory/scopes/scope-policy';
import { asksToRecall } from '../memory/retrieval/recall-request';
import type { ContextRetriever } from '../memory/retrieval/retrieve-context';
import type { Logger } from '../shared/logger';
import { withConflicts } from './conflict-notes';
import { buildPrompt, type BuiltPrompt, type PromptMemory, type PromptTurn } from './prompt-builder';
import { fitText, type ReplyBudget, type TokenEstimator } from './token-budget';

export interface ReplyPromptDeps {
  readonly config: Pick<Config, 'sleep'>;
  readonly context: ContextRetriever;
  readonly conversations: Pick<ConversationStore, 'turnsAmong'>;
  readonly memories: Pick<MemoryStore, 'activeGoals' | 'conflicts' | 'revive'>;
  readonly soul: SoulReader;
  readonly logger: Logger;
  readonly budget: ReplyBudget;
  readonly estimator: TokenEstimator;
  readonly systemPrompt: string;
  readonly tools: readonly LlmTool[];
}

export interface ReplyPromptInput {
  readonly scope: Scope;
  /** The scope's policy resolved for this turn: "now" and retrieval's dates are in its zone. */
  readonly policy: Pick<ScopePolicy, 'timeZone'>;
  /** The working memory, its recent turns already including the message. */
  readonly memory: WorkingMemory;
  /** The message's text (what retrieval searches for). */
  readonly content: string;
  /** The conversation's recent turns, the message included. */
  readonly turns: readonly Episode[];
  readonly now: Date;
  /** Name the author of each turn (a group). */
  readonly showAuthors: boolean;
}

export interface ReplyPrompt {
  readonly built: BuiltPrompt;
  /** The retrieved memories and turns shown, less the memories the soul states. */
  readonly memories: PromptMemory[];
  /**
   * Memories the message brought up that the soul states: they still count as shown (the reply
   * may repeat them, and sleep must not learn them back from it).
   */
  readonly shownInSoul: string[];
  readonly goals: string[];
  /** Retrieval's notes (for the reply's log line). */
  readonly notes: string[];
}

export interface ReplyPrompts {
  assemble(input: ReplyPromptInput): Promise<ReplyPrompt>;
}

export function createReplyPrompts(deps: ReplyPromptDeps): ReplyPrompts {
  const { config, budget, estimator, logger: log } = deps;

  async function contextOf(
    memory: WorkingMemory,
    text: string,
    exclude: string[],
    now: Date,
    timeZone: string,
    includeFaded: boolean,
  ): Promise<{ memories: PromptMemory[]; notes: string[] }> {
    const { scopeId } = memory;
    try {
      // The turns sent as messages are left out; older turns of this conversation (compacted into
      // its summary, which keeps only their gist) may come back when the message asks for them.
      const context = await deps.context.retrieveContext({
        scopeId,
        message: text,
        budgetTokens: budget.memoryTokens,
        excludeEpisodeIds: exclude,
        now,
        timeZone,
        includeFaded,
      });
      const memories = context.items
        .filter((i) => i.kind === 'memory' || i.kind === 'episode')
        .map((i) => ({ id: i.id, kind: i.kind as PromptMemory['kind'], text: i.kind === 'episode' ? `(earlier) ${i.text}` : i.text }));
      return { memories, notes: context.notes };
    } catch (error) {
      log.warn('retrieval failed; replying without memories', { scopeId, error });
      return { memories: [], notes: ['retrieval failed'] };
    }
  }

  /** "Now" in the turn's zone (the scope policy's: its own, else TZ), as the person reads their clock. */
  function nowLine(zone: string, now: Date): string {
    return `Now: ${formatLocalMinute(now, zone)} (${zone}).`;
  }

  /** The person's turns with what they answer or were forwarded from, as the person saw them. */
  function promptTurns(episodes: readonly Episode[]): PromptTurn[] {
    return episodes.map((e) => ({
      id: e.id,
      role: e.role as PromptTurn['role'],
      author: e.author,
      content: e.role === 'user' ? withMessageContext(e.content, e.metadata) : e.content,
    }));
  }

  /**
   * The faded memories the person asked for and the prompt shows are revived (memory-store.ts
   * `revive`). A failure costs the revival, not the reply.
   */
  async function revive(scope: Scope, shown: readonly string[], now: Date): Promise<void> {
    try {
      const origin = { now, reason: 'recalled: the person asked to remember' };
      const revived = await deps.memories.revive({ scopeId: scope.id, ids: shown }, origin);
      if (revived.length > 0) log.info('faded memories recalled and revived', { scope: scope.key, revived: revived.length });
    } catch (error) {
      log.warn('revival of recalled memories failed', { scope: scope.key, error });
    }
  }

  return {
    async assemble({ scope, policy, memory, content, turns, now, showAuthors }) {
      // Deep recall: only a message that asks to remember reaches the memories that have faded.
      const recall = asksToRecall(content);
      const [{ memories: retrieved, notes }, soulView, goals, conflicts] = await Promise.all([
        contextOf(memory, content, [...new Set([...memory.state.recentTurnIds, ...turns.map((t) => t.id)])], now, policy.timeZone, recall),
        deps.soul
          .read(scope.id)
          .catch((error: unknown) => (log.warn('soul unavailable for this reply', { scope: scope.key, error }), { markdown: '', memoryIds: [] as string[] })),
        // Seed 000 activeGoals: goal memories, plus scheduled tasks once a scheduler of tasks exists.
        deps.memories
          .activeGoals(scope.id)
          .catch((error: unknown) => (log.warn('goals unavailable for this reply', { scope: scope.key, error }), [] as string[])),
        deps.memories.conflicts(scope.id).catch((error: unknown) => (log.warn('conflicts unavailable for this reply', { scope: scope.key, error }), [])),
      ]);
      // The soul is in every prompt: a memory it states is not listed again among the retrieved ones.
      const inSoul = new Set(soulView.memoryIds);
      // Those the message brought up still count as shown: the reply may repeat them, and sleep
      // must not learn them back from it.
      const shownInSoul = retrieved.filter((m) => m.kind === 'memory' && inSoul.has(m.id)).map((m) => m.id);
      // Both sides of an open contradiction the message brought up are listed, annotated (conflict-notes.ts).
      const memories = withConflicts(
        retrieved.filter((m) => m.kind !== 'memory' || !inSoul.has(m.id)),
        shownInSoul,
        conflicts,
      );
      // A soul stored before SOUL_MAX_TOKENS (or under a larger one) is cut to it until sleep rebuilds it.
      const soul = fitText(soulView.markdown, Math.ceil(config.sleep.soulMaxTokens * estimator.factor), estimator);
      const built = buildPrompt({
        systemPrompt: deps.systemPrompt,
        now: nowLine(policy.timeZone, now),
        soul,
        memories,
        goals,
        summary: memory.summary,
        turns: promptTurns(turns),
        tools: deps.tools,
        budget,
        estimator,
        showAuthors,
      });
      if (recall) await revive(scope, built.memoryIds, now);
      return { built, memories, shownInSoul, goals, notes };
    },
  };
}
