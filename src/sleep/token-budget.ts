/**
 * Daily token budgets: how many model tokens a scope has spent since its local midnight, and how
 * many it may still spend today.
 *
 * Spending is read from LlmCall rows (input + output tokens of every call tagged with the scope,
 * whatever its purpose), so the budget covers everything that costs money for that scope and
 * survives restarts. "Today" is the scope's own local day, so a budget resets at the owner's
 * midnight rather than the server's.
 */
import type { PrismaClient } from '../storage/prisma';
import { startOfLocalDay } from './sleep-window';

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

export function createTokenBudget(prisma: PrismaClient): TokenBudget {
  async function spentSince(scopeId: string, since: Date): Promise<number> {
    const sum = await prisma.llmCall.aggregate({
      where: { scopeId, createdAt: { gte: since } },
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
