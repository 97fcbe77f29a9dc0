/**
 * Asking the model about one batch, prompt by prompt: each answer becomes a plan, and what is
 * gathered along the way (plans, responses, what the prompts showed, the episodes whose answers
 * could not be used) is kept for the consolidator to apply or to count an attempt for.
 */
import { completeStructured, isCutOff, type StructuredResult } from '../../llm/structured';
import type { LanguageModel, LlmError, LlmResponse } from '../../llm/language-model';
import { ShortIds } from '../../memory/short-ids';
import type { Logger } from '../../shared/logger';
import type { Episode, Memory } from '../../storage/prisma';
import { estimateRequestTokens, isBudgetError } from '../token-budget';
import { answerProblem, withAbsoluteDates } from './answer-review';
import type { BatchContext } from './batch-context';
import { halveGroups } from './grouping';
import { type ConsolidationAnswer, consolidationAnswerSchema } from './operations';
import { makePlan, type Plan } from './plan';
import { buildConsolidationPrompt, CONSOLIDATION_SYSTEM_PROMPT, type PromptEpisodeGroup } from './prompt';

/** One batch's question setting. */
export interface AskSetting {
  readonly scopeId: string;
  readonly runId: string;
  readonly now: Date;
  readonly llm: LanguageModel;
  readonly timeZone: string;
  readonly group: boolean;
  readonly maxAnswerTokens: number;
  /** Tokens the batch may still spend. */
  readonly budget: number;
  /** Reflection is due: the first prompt whose answer is used asks for insights too. */
  readonly insightsWanted: boolean;
}

/** What asking gathered; the arrays grow as {@link BatchAsker.ask} runs. */
export interface BatchAsker {
  /**
   * Plans one prompt's groups; false when the budget stops the batch here. An answer cut off
   * at the answer limit (even after its repair turn) is asked again in two halves, down to
   * one episode a prompt; an answer that teaches nothing where there was something to learn
   * is asked again at once in two halves (`retried` marks those), and what still cannot be
   * used waits for a later run.
   */
  ask(groups: readonly PromptEpisodeGroup[], retried?: boolean): Promise<boolean>;
  readonly plans: Plan[];
  readonly responses: LlmResponse[];
  readonly shownEpisodes: Episode[];
  readonly shownMemories: Map<string, Memory>;
  /** Episodes whose answer could not be used: they stay pending with an attempt counted. */
  readonly unusable: Episode[];
  /** What the planner refused in answers that could not be used. */
  readonly refused: Plan['rejected'];
  /** Episodes a prompt was answered for (used or not). */
  readonly handled: Set<string>;
  /** The insights asked for rode on an answer that was used. */
  readonly reflected: boolean;
}

export function createBatchAsker(deps: { readonly context: BatchContext; readonly log: Logger }, setting: AskSetting): BatchAsker {
  const { context, log } = deps;
  const { scopeId, runId, now, llm, timeZone, group } = setting;
  const plans: Plan[] = [];
  const responses: LlmResponse[] = [];
  const shownEpisodes: Episode[] = [];
  const shownMemories = new Map<string, Memory>();
  const unusable: Episode[] = [];
  const refused: Plan['rejected'] = [];
  const handled = new Set<string>();
  // Reflection (sleep/reflection.ts) rides on this batch's call when due: the first prompt whose
  // answer is used asks for insights too; a prompt whose answer is not used passes the request on.
  let insightsWanted = setting.insightsWanted;
  let reflected = false;
  let budget = setting.budget;

  const ask = async (groups: readonly PromptEpisodeGroup[], retried = false): Promise<boolean> => {
    const episodeIds = new ShortIds();
    const memoryIds = new ShortIds();
    const memories = await context.relevantMemories(scopeId, groups, now);
    const insightsAsked = insightsWanted;
    const prompt = buildConsolidationPrompt({ memories, groups, memoryIds, episodeIds, timeZone, insights: insightsAsked, group });
    const call = {
      system: CONSOLIDATION_SYSTEM_PROMPT,
      messages: [{ role: 'user' as const, content: prompt }],
      maxTokens: setting.maxAnswerTokens,
      temperature: 0,
      purpose: 'consolidation',
      scopeId,
      runId,
    };
    if (estimateRequestTokens(call) > budget) return false;
    const promptEpisodes = groups.flatMap((g) => g.episodes);
    let structured: StructuredResult<ConsolidationAnswer>;
    try {
      structured = await completeStructured(llm, call, consolidationAnswerSchema);
    } catch (error) {
      // The budget refused this prompt (or its repair turn): like a prompt that does not fit,
      // it and the rest wait for another day; what earlier prompts planned is applied.
      if (isBudgetError(error)) return false;
      if (!isCutOff(error)) throw error;
      // The cut-off answers were paid for: the halves are asked on what is left after them.
      const details = (error as LlmError).details ?? {};
      budget -= Number(details.inputTokens ?? 0) + Number(details.outputTokens ?? 0);
      const halves = halveGroups(groups);
      log.warn('a consolidation answer was cut off; asking about half as much at once', {
        scopeId,
        runId,
        episodes: promptEpisodes.length,
        split: halves !== undefined,
      });
      if (!halves) {
        unusable.push(...promptEpisodes);
        for (const e of promptEpisodes) handled.add(e.id);
        return true;
      }
      return (await ask(halves[0], retried)) && ask(halves[1], retried);
    }
    const { value, responses: calls } = structured;
    responses.push(...calls);
    budget -= calls.reduce((n, r) => n + r.usage.inputTokens + r.usage.outputTokens, 0);
    const relayed = await context.relayedTurns(scopeId, promptEpisodes);
    const plan = withAbsoluteDates(
      makePlan({ answer: value, episodes: promptEpisodes, memories, episodeIds, memoryIds, relayed, insightsAsked }),
      promptEpisodes,
      timeZone,
    );
    for (const r of plan.rejected) log.warn('rejected a consolidation operation', { scopeId, runId, operation: r.operation, reason: r.reason });
    for (const e of promptEpisodes) handled.add(e.id);
    const problem = answerProblem(value, plan, promptEpisodes);
    const halves = problem && !retried ? halveGroups(groups) : undefined;
    if (halves) {
      // A smaller prompt is a new question (a model that slipped on ten turns usually reads
      // five right), asked now: the next run would halve it too, but the next run may be
      // tomorrow's window, and the person's words would wait a night for it. Once only, so
      // a model that cannot answer costs at most two more calls a prompt before the wait.
      log.warn('a consolidation answer taught nothing; asking about half as much at once', { scopeId, runId, episodes: promptEpisodes.length, problem });
      for (const e of promptEpisodes) handled.delete(e.id);
      refused.push(...plan.rejected);
      return (await ask(halves[0], true)) && ask(halves[1], true);
    }
    if (problem) {
      log.warn('a consolidation answer taught nothing; its episodes stay for a later run', { scopeId, runId, episodes: promptEpisodes.length, problem });
      unusable.push(...promptEpisodes);
      refused.push(...plan.rejected);
      return true;
    }
    plans.push(plan);
    if (insightsAsked) {
      insightsWanted = false;
      reflected = true;
    }
    shownEpisodes.push(...promptEpisodes);
    for (const m of memories) shownMemories.set(m.id, m);
    return true;
  };

  return {
    ask,
    plans,
    responses,
    shownEpisodes,
    shownMemories,
    unusable,
    refused,
    handled,
    get reflected() {
      return reflected;
    },
  };
}
