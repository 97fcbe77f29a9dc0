/**
 * Which turns a compaction cycle takes, and the working memory once they are summarized. The
 * cycle takes the oldest turns, keeping the last AGENT_RECENT_TURNS in full (fewer when they
 * would take too much of the window, so one cycle is enough), cut before a person's turn, and
 * only as many as the compaction prompts can fit.
 */
import type { WorkingMemory } from '../memory/conversations/conversation-store';
import type { Episode } from '../memory/episodes/episode-service';
import type { CompactionOptions } from './compaction';
import { MESSAGE_OVERHEAD_TOKENS, type TokenEstimator } from './token-budget';

/** Most of the window the turns kept in full may take after a cycle, so one cycle is enough. */
const KEEP_SHARE = 0.4;
/** The least room a summary is given when sizing the compaction prompts. */
const MIN_SUMMARY_TOKENS = 256;
/** The compaction prompts' own text (instructions, labels) beside the turns and summaries. */
const PROMPT_OVERHEAD_TOKENS = 400;
/** A turn's label and separators in a compaction prompt. */
const TURN_LINE_OVERHEAD_TOKENS = 12;

/** The oldest turns to compact: all but the last N (fewer when they would not fit), cut before a person's turn. */
export function selectTurns(turns: readonly Episode[], options: CompactionOptions, estimator: TokenEstimator): Episode[] {
  let keep = Math.min(options.recentTurns, turns.length);
  let keptTokens = turns.slice(turns.length - keep).reduce((s, e) => s + estimator.text(e.content) + MESSAGE_OVERHEAD_TOKENS, 0);
  while (keep > 1 && keptTokens > options.contextTokens * KEEP_SHARE) {
    keptTokens -= estimator.text(turns[turns.length - keep]!.content) + MESSAGE_OVERHEAD_TOKENS;
    keep--;
  }
  let cut = turns.length - keep;
  while (cut < turns.length - 1 && turns[cut]!.role !== 'user') cut++;
  // The compaction prompts must fit the window too: take the oldest turns that do.
  const room = options.contextTokens - Math.max(options.summaryTokens, MIN_SUMMARY_TOKENS) * 2 - PROMPT_OVERHEAD_TOKENS;
  const chosen: Episode[] = [];
  let used = 0;
  for (const e of turns.slice(0, cut)) {
    const cost = estimator.text(e.content) + TURN_LINE_OVERHEAD_TOKENS;
    if (chosen.length > 0 && used + cost > room) break;
    chosen.push(e);
    used += cost;
  }
  return chosen;
}

/**
 * The working memory after cycle `cycle` folded `turns` (the pending flush's) into `summary`:
 * they leave the recent turns, the cycle is recorded as done, and the context's size is
 * estimated again.
 */
export function compactedMemory(
  current: WorkingMemory,
  cycle: { readonly number: number; readonly removed: ReadonlySet<string>; readonly turns: readonly Episode[]; readonly summary: string; readonly now: Date },
  estimator: TokenEstimator,
): WorkingMemory {
  const { removed, turns, summary, now } = cycle;
  return {
    ...current,
    summary,
    state: {
      ...current.state,
      recentTurnIds: current.state.recentTurnIds.filter((id) => !removed.has(id)),
      compaction: {
        cycle: cycle.number,
        lastAt: now.toISOString(),
        lastAttemptAt: now.toISOString(),
        lastFailure: null,
        compactedTurns: current.state.compaction.compactedTurns + removed.size,
        pending: null,
      },
      lastContextTokens: Math.max(
        0,
        current.state.lastContextTokens -
          turns.reduce((s, e) => s + estimator.text(e.content) + MESSAGE_OVERHEAD_TOKENS, 0) +
          estimator.text(summary) -
          estimator.text(current.summary ?? ''),
      ),
    },
  };
}
