/**
 * Daily token budgets: how many model tokens a scope has spent since its local midnight, and how
 * many it may still spend today.
 *
 * Spending is read from LlmCall rows (input + output tokens of the scope's sleep calls, see
 * {@link SLEEP_PURPOSES}), so the budget survives restarts. "Today" is the scope's own local day, so a budget resets at the owner's
 * midnight rather than the server's.
 */
import { DEFAULT_MAX_TOKENS, LlmError, type LanguageModel, type LlmRequest } from '../llm/language-model';
import type { PrismaClient } from '../storage/prisma';
import { startOfLocalDay } from '../shared/local-time';
import { estimateTokens } from '../shared/tokens';

/** An answer is estimated at a quarter of its ceiling: answers are usually far shorter than `maxTokens`. */
const ANSWER_SHARE = 4;

/** A scope's spending against its budget for the local day of `now`. */
export interface BudgetStatus {
  /** Tokens spent since the start of the local day. */
  readonly spent: number;
  /** The daily budget; 0 means unlimited. */
  readonly budget: number;
  /** What is left (never negative); Infinity when unlimited. */
  readonly left: number;
  /** Local midnight the day is counted from. */
  readonly dayStart: Date;
}

export interface TokenBudget {
  /** Tokens (input + output) the scope spent since the start of its local day. */
  spentToday(params: { scopeId: string; now: Date; timeZone: string }): Promise<number>;
  /** Spending against `dailyBudget` (0 = unlimited). */
  status(params: { scopeId: string; now: Date; timeZone: string; dailyBudget: number }): Promise<BudgetStatus>;
}

/**
 * The purposes of sleep's own model calls, the only ones its budget counts. Replies and the
 * compaction and summaries of live conversations have their own limit (REPLY_DAILY_BUDGET): were
 * they counted here, a talkative day would spend the budget meant for the night and starve
 * consolidation.
 */
export const SLEEP_PURPOSES: readonly string[] = ['consolidation', 'entities', 'capped-memory', 'capped-compaction'];

export function createTokenBudget(prisma: PrismaClient): TokenBudget {
  async function spentSince(scopeId: string, since: Date): Promise<number> {
    const sum = await prisma.llmCall.aggregate({
      where: { scopeId, createdAt: { gte: since }, purpose: { in: [...SLEEP_PURPOSES] } },
      _sum: { inputTokens: true, outputTokens: true },
    });
    return (sum._sum.inputTokens ?? 0) + (sum._sum.outputTokens ?? 0);
  }

  return {
    spentToday: ({ scopeId, now, timeZone }) => spentSince(scopeId, startOfLocalDay(now, timeZone)),
    async status({ scopeId, now, timeZone, dailyBudget }) {
      const dayStart = startOfLocalDay(now, timeZone);
      const spent = await spentSince(scopeId, dayStart);
      const left = dailyBudget === 0 ? Infinity : Math.max(0, dailyBudget - spent);
      return { spent, budget: dailyBudget, left, dayStart };
    },
  };
}

/**
 * Tokens a request may cost, estimated before it is sent: every text in it (system prompt,
 * messages, tool calls) by the one token estimate (shared/tokens.ts), plus a quarter of its
 * answer ceiling (answers are usually far shorter than `maxTokens`). The consolidator sizes its
 * prompts against the budget by the same estimate.
 */
export function estimateRequestTokens(request: LlmRequest): number {
  const texts: string[] = [request.system ?? ''];
  for (const message of request.messages) {
    texts.push(message.content);
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) texts.push(call.name, JSON.stringify(call.arguments ?? {}));
  }
  for (const tool of request.tools ?? []) texts.push(tool.name, tool.description, JSON.stringify(tool.parameters));
  return estimateTokens(texts.join('\n')) + Math.ceil((request.maxTokens ?? DEFAULT_MAX_TOKENS) / ANSWER_SHARE);
}

/** A model that spends at most a job's token budget, and what it spent. */
export interface BudgetedModel extends LanguageModel {
  /** Tokens still allowed (Infinity when unlimited; never negative). */
  left(): number;
  /** What the calls made through it cost, as the provider reported (failed calls cost nothing). */
  spent(): { readonly calls: number; readonly inputTokens: number; readonly outputTokens: number };
}

/**
 * Wraps `llm` for one sleep job: before EVERY call (a consolidation prompt, its repair turn,
 * entity folding, capped mode) the request's estimate is checked against what is
 * left, and a call that does not fit is not sent (LlmError `budget`). So a job spends at most its
 * budget plus what its last call cost beyond its estimate: never more than one call's worth over.
 */
export function withTokenBudget(llm: LanguageModel, budget: number): BudgetedModel {
  let calls = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  const left = () => Math.max(0, budget - inputTokens - outputTokens);
  return {
    provider: llm.provider,
    model: llm.model,
    contextWindow: llm.contextWindow,
    left,
    spent: () => ({ calls, inputTokens, outputTokens }),
    async complete(request) {
      const estimate = estimateRequestTokens(request);
      if (Number.isFinite(budget) && estimate > left()) {
        throw new LlmError(`The ${request.purpose} call was not sent: it needs about ${estimate} tokens and the daily token budget has ${left()} left`, {
          reason: 'budget',
          provider: llm.provider,
          model: llm.model,
          details: { purpose: request.purpose, estimate, left: left() },
          hint: 'It runs once the budget resets (local midnight); raise SLEEP_DAILY_TOKEN_BUDGET (or the scope\u2019s dailyTokenBudget) to allow more.',
        });
      }
      calls++;
      const response = await llm.complete(request);
      inputTokens += response.usage.inputTokens;
      outputTokens += response.usage.outputTokens;
      return response;
    },
    close: () => llm.close(),
  };
}

/** Whether `error` is a call refused by a token budget. */
export function isBudgetError(error: unknown): error is LlmError {
  return error instanceof LlmError && error.reason === 'budget';
}
