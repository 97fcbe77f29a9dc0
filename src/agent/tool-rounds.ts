/**
 * The model call of one reply with its tool rounds (seed 002 tools): the model answers, or calls
 * memory tools that run bound to the scope and whose results go back to it, each cut to the room
 * left in the window; a model still calling tools after {@link MAX_TOOL_ROUNDS} rounds is stopped
 * there. Every request fits the window.
 */
import type { LanguageModel, LlmMessage, LlmResponse, LlmToolCall } from '../llm/language-model';
import type { BoundTools, MemoryTools, ToolResult } from './memory-tools';
import { fitText, type ReplyBudget, type TokenEstimator } from './token-budget';

/** Tool rounds per reply (seed 002 tools; a model looping on tools is stopped here). */
export const MAX_TOOL_ROUNDS = 4;

export interface ToolRoundsDeps {
  readonly llm: LanguageModel;
  readonly estimator: TokenEstimator;
  readonly budget: ReplyBudget;
  readonly tools: Pick<MemoryTools, 'definitions'>;
  /** Default {@link MAX_TOOL_ROUNDS}. */
  readonly maxToolRounds: number;
}

/** What the model said in the end, every response (for the reported usage), the tools' results and the tools called. */
export interface ConversationOutcome {
  readonly text: string;
  readonly responses: LlmResponse[];
  readonly results: ToolResult[];
  readonly called: string[];
}

/**
 * The model call with its tool rounds; every request fits the window. `stableLength` is how much
 * of `system` the next message repeats: every round marks it for the prompt cache, so the rounds
 * of a reply and the next replies read it from there.
 */
export type Converse = (system: string, first: LlmMessage[], bound: BoundTools, scopeId: string, stableLength?: number) => Promise<ConversationOutcome>;

export function createToolRounds(deps: ToolRoundsDeps): Converse {
  const { llm, estimator, budget, tools, maxToolRounds } = deps;
  return async function converse(system, first, bound, scopeId, stableLength) {
    const messages = [...first];
    const responses: LlmResponse[] = [];
    const results: ToolResult[] = [];
    const called: string[] = [];
    const minAnswer = Math.min(budget.answerTokens, 256);
    for (let round = 0; ; round++) {
      const prompt = estimator.request({ system, messages, tools: tools.definitions });
      const maxTokens = Math.max(16, Math.min(budget.answerTokens, budget.contextTokens - prompt));
      const response = await llm.complete({
        system,
        messages,
        tools: tools.definitions,
        maxTokens,
        purpose: 'reply',
        scopeId,
        ...(stableLength && { cachePrefixLength: stableLength }),
      });
      responses.push(response);
      if (response.toolCalls.length === 0 || round >= maxToolRounds) return { text: response.text.trim(), responses, results, called };
      messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
      for (const call of response.toolCalls) {
        called.push(call.name);
        const result = await bound.execute(call as LlmToolCall);
        results.push(result);
        const room = budget.contextTokens - minAnswer - estimator.request({ system, messages, tools: tools.definitions }) - 24;
        const content = fitText(result.content, room, estimator) || 'result left out: no room left in the context';
        messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content, isError: result.isError });
      }
    }
  };
}
