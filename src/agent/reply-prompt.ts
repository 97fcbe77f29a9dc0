/**
 * What the model reads for one reply, assembled: the memories and earlier turns retrieval finds
 * for the message (less the turns sent in full as messages, and less the memories the soul
 * states), the soul cut to SOUL_MAX_TOKENS, the active goals and "now" in the scope's zone, built
 * in seed 000's order within the reply budget (prompt-builder.ts). A part that cannot be read
 * (retrieval, the soul, the goals) is left out with a log line; the reply goes on without it.
 */
import type { Config } from '../config/load-config';
import type { LlmTool } from '../llm/language-model';
import type { ConversationStore, WorkingMemory } from '../memory/conversations/conversation-store';
import { formatLocalMinute } from '../memory/digests/digest';
import type { Episode } from '../memory/episodes/episode-service';
import type { MemoryStore } from '../memory/memories/memory-store';
import type { SoulReader } from '../memory/profiles/soul';
import type { Scope } from '../memory/records';
import type { ContextRetriever } from '../memory/retrieval/retrieve-context';
import type { Logger } from '../shared/logger';
import { buildPrompt, type BuiltPrompt, type PromptMemory, type PromptTurn } from './prompt-builder';
import { fitText, type ReplyBudget, type TokenEstimator } from './token-budget';

export interface ReplyPromptDeps {
  readonly config: Pick<Config, 'sleep' | 'timeZone'>;
  readonly context: ContextRetriever;
  readonly conversations: Pick<ConversationStore, 'turnsAmong'>;
  readonly memories: Pick<MemoryStore, 'activeGoals'>;
  readonly soul: SoulReader;
  readonly logger: Logger;
  readonly budget: ReplyBudget;
  readonly estimator: TokenEstimator;
  readonly systemPrompt: string;
  readonly tools: readonly LlmTool[];
}

export interface ReplyPromptInput {
  readonly scope: Scope;
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

  async function contextOf(memory: WorkingMemory, text: string, exclude: string[], now: Date, timeZone: string): Promise<{ memories: PromptMemory[]; notes: string[] }> {
    const { scopeId } = memory;
    try {
      // The turns sent as messages are left out; older turns of this conversation (compacted into
      // its summary, which keeps only their gist) may come back when the message asks for them.
      const context = await deps.context.retrieveContext({ scopeId, message: text, budgetTokens: budget.memoryTokens, excludeEpisodeIds: exclude, now, timeZone });
      const memories = context.items
        .filter((i) => i.kind === 'memory' || i.kind === 'episode')
        .map((i) => ({ id: i.id, kind: i.kind as PromptMemory['kind'], text: i.kind === 'episode' ? `(earlier) ${i.text}` : i.text }));
      return { memories, notes: context.notes };
    } catch (error) {
      log.warn('retrieval failed; replying without memories', { scopeId, error });
      return { memories: [], notes: ['retrieval failed'] };
    }
  }

  /** "Now" in the scope's zone (its own, else TZ), as the person reads their clock. */
  function nowLine(scope: Scope, now: Date): string {
    const zone = scope.timezone ?? config.timeZone;
    return `Now: ${formatLocalMinute(now, zone)} (${zone}).`;
  }

  function promptTurns(episodes: readonly Episode[]): PromptTurn[] {
    return episodes.map((e) => ({ id: e.id, role: e.role as PromptTurn['role'], author: e.author, content: e.content }));
  }

  return {
    async assemble({ scope, memory, content, turns, now, showAuthors }) {
      const [{ memories: retrieved, notes }, soulView, goals] = await Promise.all([
        contextOf(memory, content, [...new Set([...memory.state.recentTurnIds, ...turns.map((t) => t.id)])], now, scope.timezone ?? config.timeZone),
        deps.soul.read(scope.id).catch((error: unknown) => (log.warn('soul unavailable for this reply', { scope: scope.key, error }), { markdown: '', memoryIds: [] as string[] })),
        // Seed 000 activeGoals: goal memories, plus scheduled tasks once a scheduler of tasks exists.
        deps.memories.activeGoals(scope.id).catch((error: unknown) => (log.warn('goals unavailable for this reply', { scope: scope.key, error }), [] as string[])),
      ]);
      // The soul is in every prompt: a memory it states is not listed again among the retrieved ones.
      const inSoul = new Set(soulView.memoryIds);
      const memories = retrieved.filter((m) => m.kind !== 'memory' || !inSoul.has(m.id));
      // Those the message brought up still count as shown: the reply may repeat them, and sleep
      // must not learn them back from it.
      const shownInSoul = retrieved.filter((m) => m.kind === 'memory' && inSoul.has(m.id)).map((m) => m.id);
      // A soul stored before SOUL_MAX_TOKENS (or under a larger one) is cut to it until sleep rebuilds it.
      const soul = fitText(soulView.markdown, Math.ceil(config.sleep.soulMaxTokens * estimator.factor), estimator);
      const built = buildPrompt({ systemPrompt: `${deps.systemPrompt}\n${nowLine(scope, now)}`, soul, memories, goals, summary: memory.summary, turns: promptTurns(turns), tools: deps.tools, budget, estimator, showAuthors });
      return { built, memories, shownInSoul, goals, notes };
    },
  };
}
