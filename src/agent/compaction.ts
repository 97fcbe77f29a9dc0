/**
 * Context compaction (seed 002 sleep trigger, seed 003 pre-compaction extraction): when a
 * conversation's working context reaches 80 % of the window (70 % while the scope is idle), and
 * no compaction ran in the last cooldown (5 minutes by default), one cycle runs:
 *
 * 1. Flush. The system itself, not the model's goodwill, extracts the durable facts of the turns
 *    about to leave the working context (`completeStructured`) and stores them as memories, in
 *    one transaction with the working state that records the flush. Evidence is the person's own
 *    turns only, and text that reads as an instruction or speaks about the assistant is refused
 *    (the persona protection of sleep consolidation).
 * 2. Summary. The same turns are folded into the running summary by the configured strategy;
 *    the last N turns (AGENT_RECENT_TURNS) stay in full.
 * 3. The next reply re-reads memories (its retrieval runs after the cycle), so what was flushed
 *    is available at once.
 *
 * Exactly once per cycle: a flush that failed cancels the cycle (nothing changes, every turn
 * stays in full, the cycle is tried again after the cooldown); a flush that succeeded is
 * recorded as `pending`, so when the summary step fails the retry summarizes the same turns
 * without flushing them a second time.
 *
 * This file owns the cycle (when it is due, its steps and what it records); the flush step is
 * `compaction-flush.ts`, the choice of turns and the state after the summary `compaction-turns.ts`,
 * and the summary strategies `compaction-strategies.ts`.
 */
import type { CompactionStrategyName } from '../config/load-config';
import type { LanguageModel } from '../llm/language-model';
import type { Logger } from '../shared/logger';
import type { ConversationStore, WorkingMemory, WorkingState } from '../memory/conversations/conversation-store';
import type { Episode } from '../memory/episodes/episode-service';
import { flushTurns, type FlushDeps } from './compaction-flush';
import { summaryStrategies, type CompactionTurn } from './compaction-strategies';
import { compactedMemory, selectTurns } from './compaction-turns';
import type { TokenEstimator } from './token-budget';

export { FLUSH_SYSTEM } from './compaction-flush';

/** Share of the window that triggers compaction while the person is talking (seed 002). */
export const BUSY_THRESHOLD = 0.8;
/** Share of the window that triggers compaction while the scope is idle (seed 003 sleep-based). */
export const IDLE_THRESHOLD = 0.7;

export interface CompactionOptions {
  readonly strategy: CompactionStrategyName;
  /** Turns kept in full. */
  readonly recentTurns: number;
  readonly summaryTokens: number;
  /** The reply window (prompt + answer); compaction prompts fit it too. */
  readonly contextTokens: number;
  readonly cooldownMs: number;
}

export interface CompactorDeps {
  readonly llm: LanguageModel;
  /** Reads the turns and records the flush (memories and working state, one transaction). */
  readonly conversations: ConversationStore;
  readonly estimator: TokenEstimator;
  readonly logger: Logger;
  readonly options: CompactionOptions;
}

export type CompactionOutcome =
  | {
      readonly status: 'compacted';
      readonly memory: WorkingMemory;
      readonly cycle: number;
      readonly compactedTurnIds: string[];
      readonly flushedMemoryIds: string[];
    }
  | { readonly status: 'cancelled'; readonly memory: WorkingMemory; readonly phase: 'flush' | 'summary'; readonly error: unknown }
  | { readonly status: 'nothing'; readonly memory: WorkingMemory };

export interface Compactor {
  /** Whether a cycle is due for a working context of `usedTokens`. */
  due(memory: WorkingMemory, usedTokens: number, now: Date, idle: boolean): boolean;
  /** Runs one cycle (flush, then summary); never throws for a model failure. */
  compact(memory: WorkingMemory, now: Date): Promise<CompactionOutcome>;
}

/** What the flush of a cycle works with: the compactor's parts. */
interface CycleDeps extends FlushDeps {
  readonly estimator: TokenEstimator;
  readonly options: CompactionOptions;
}

/** The turns a cycle summarizes, once their flush is stored, and the working memory that records it. */
interface FlushedCycle {
  readonly turns: Episode[];
  readonly current: WorkingMemory;
  readonly turnIds: readonly string[];
  readonly flushedMemoryIds: string[];
}

/** The working state after a failed step: the attempt and its failure recorded, the turns unchanged. */
function failed(memory: WorkingMemory, now: Date, error: unknown): WorkingState {
  return {
    ...memory.state,
    compaction: {
      ...memory.state.compaction,
      lastAttemptAt: now.toISOString(),
      lastFailure: error instanceof Error ? error.message.slice(0, 300) : String(error),
    },
  };
}

/**
 * The flushed turns of cycle `cycle`: those of its pending flush when one is stored already (never
 * flush twice), else the chosen turns, flushed now. A failed flush cancels the cycle (its outcome
 * is returned); no turns to compact is `nothing`.
 */
async function flushedCycle(deps: CycleDeps, memory: WorkingMemory, cycle: number, now: Date, runId: string): Promise<FlushedCycle | CompactionOutcome> {
  const all = await deps.store.recentTurns(memory);
  const pending = memory.state.compaction.pending;
  if (pending && pending.cycle === cycle) {
    // The flush of this cycle is stored already: summarize exactly those turns, never flush twice.
    const ids = new Set(pending.turnIds);
    return { turns: all.filter((e) => ids.has(e.id)), current: memory, turnIds: pending.turnIds, flushedMemoryIds: pending.memoryIds };
  }
  const turns = selectTurns(all, deps.options, deps.estimator);
  if (turns.length === 0) return { status: 'nothing', memory };
  let flushedMemoryIds: string[];
  try {
    flushedMemoryIds = await flushTurns(deps, memory, turns, now, runId);
  } catch (error) {
    deps.log.warn('pre-compaction flush failed; compaction cancelled, every turn stays in full', {
      scopeId: memory.scopeId,
      conversationId: memory.conversationId,
      cycle,
      error,
    });
    const next = { ...memory, state: failed(memory, now, error) };
    await deps.store.save(next);
    return { status: 'cancelled', memory: next, phase: 'flush', error };
  }
  const next = { cycle, turnIds: turns.map((e) => e.id), flushedAt: now.toISOString(), memoryIds: flushedMemoryIds };
  const current = { ...memory, state: { ...memory.state, compaction: { ...memory.state.compaction, pending: next } } };
  return { turns, current, turnIds: next.turnIds, flushedMemoryIds };
}

export function createCompactor(deps: CompactorDeps): Compactor {
  const { llm, conversations: store, estimator, options } = deps;
  const log = deps.logger.child({ component: 'compaction' });
  const strategy = summaryStrategies[options.strategy];
  const cycleDeps: CycleDeps = { llm, store, log, estimator, options };

  return {
    due(memory, usedTokens, now, idle) {
      const threshold = (idle ? IDLE_THRESHOLD : BUSY_THRESHOLD) * options.contextTokens;
      if (usedTokens < threshold && !memory.state.compaction.pending) return false;
      const c = memory.state.compaction;
      const last = Math.max(c.lastAt ? Date.parse(c.lastAt) : 0, c.lastAttemptAt ? Date.parse(c.lastAttemptAt) : 0);
      return now.getTime() - last >= options.cooldownMs;
    },

    async compact(memory, now) {
      const cycle = memory.state.compaction.cycle + 1;
      const runId = `compaction:${memory.conversationId}:${cycle}`;
      const flushed = await flushedCycle(cycleDeps, memory, cycle, now, runId);
      if ('status' in flushed) return flushed;
      const { turns, current, flushedMemoryIds } = flushed;

      const compactionTurns: CompactionTurn[] = turns.map((e) => ({
        id: e.id,
        role: e.role as CompactionTurn['role'],
        author: e.author,
        content: e.content,
        importance: e.importance,
        timestamp: e.timestamp,
      }));
      let summary: string;
      try {
        summary = await strategy.summarize({
          previousSummary: current.summary,
          turns: compactionTurns,
          maxTokens: options.summaryTokens,
          llm,
          estimator,
          scopeId: memory.scopeId,
          runId,
          logger: log,
        });
      } catch (error) {
        log.warn('summary failed; the flushed turns stay in full until the next attempt', {
          scopeId: memory.scopeId,
          conversationId: memory.conversationId,
          cycle,
          error,
        });
        const next = { ...current, state: failed(current, now, error) };
        await store.save(next);
        return { status: 'cancelled', memory: next, phase: 'summary', error };
      }

      const removed = new Set(flushed.turnIds);
      const next = compactedMemory(current, { number: cycle, removed, turns, summary, now }, estimator);
      await store.save(next);
      log.info('compacted the working context', {
        scopeId: memory.scopeId,
        conversationId: memory.conversationId,
        cycle,
        strategy: strategy.name,
        turns: removed.size,
        kept: next.state.recentTurnIds.length,
        flushedMemories: flushedMemoryIds.length,
        summaryTokens: estimator.text(summary),
      });
      return { status: 'compacted', memory: next, cycle, compactedTurnIds: [...removed], flushedMemoryIds };
    },
  };
}
