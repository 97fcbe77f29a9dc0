/**
 * Token accounting for replies: an estimator per model family and the reply budget of seed 000
 * (system prompt + soul always; relevant memories; active goals; a summary of older turns; recent
 * turns in full; the rest reserved for the answer).
 *
 * The counts are ESTIMATES. No model's tokenizer installs offline for every provider, so the
 * estimator is `estimateTokens` (src/shared/tokens.ts: the larger of chars/4 and words*0.75)
 * times a per-family factor that errs on the high side for tokenizers known to split more finely
 * than Claude's. The model's own count comes back with every call; the reply log line states both
 * (`estimated` and `reported`), so a factor that is off shows up in the logs rather than in an
 * overflowing request.
 */
import type { LlmMessage, LlmProvider, LlmRequest, LlmTool } from '../llm/language-model';
import { estimateTokens } from '../shared/tokens';

/**
 * Multipliers over `estimateTokens`, by model family (the model name up to the first `:`,`-` or
 * digit run). Measured loosely on English chat text against each family's published tokenizer:
 * Claude's and Llama 3's 128k vocabularies land close to chars/4; Mistral's 32k and Gemma's
 * SentencePiece vocabularies split more, Qwen about the same as Llama 3. Unknown families get the
 * most cautious factor.
 */
export const FAMILY_FACTORS: Readonly<Record<string, number>> = {
  claude: 1.0,
  llama: 1.05,
  qwen: 1.1,
  mistral: 1.15,
  gemma: 1.15,
  phi: 1.15,
};

/** Factor for a model family no row above names. */
export const UNKNOWN_FAMILY_FACTOR = 1.2;

/** Per-message framing (role markers, separators) every chat template adds. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Estimates tokens for one model. */
export interface TokenEstimator {
  /** The family the factor was chosen by (`claude`, `llama`, ... or `unknown`). */
  readonly family: string;
  readonly factor: number;
  /** Estimated tokens of a text. */
  text(text: string): number;
  /** Estimated tokens of one message, framing included. */
  message(message: LlmMessage): number;
  /** Estimated tokens of tool definitions (their JSON schemas are part of the input). */
  tools(tools: readonly LlmTool[]): number;
  /** Estimated input tokens of a whole request (system, messages, tools); the answer excluded. */
  request(request: Pick<LlmRequest, 'system' | 'messages' | 'tools'>): number;
}

/** The family of a model name: `claude-sonnet-4-6` -> claude, `llama3.2:3b` -> llama, `qwen2.5` -> qwen. */
export function modelFamily(provider: LlmProvider, model: string): string {
  if (provider === 'anthropic') return 'claude';
  const head = /^[a-z]+/i.exec(model.trim().toLowerCase())?.[0] ?? '';
  return head in FAMILY_FACTORS ? head : 'unknown';
}

export function createTokenEstimator(provider: LlmProvider, model: string): TokenEstimator {
  const family = modelFamily(provider, model);
  const factor = FAMILY_FACTORS[family] ?? UNKNOWN_FAMILY_FACTOR;
  const text = (value: string) => (value === '' ? 0 : Math.ceil(estimateTokens(value) * factor));
  const message = (m: LlmMessage): number => {
    let tokens = MESSAGE_OVERHEAD_TOKENS + text(m.content);
    if (m.role === 'assistant')
      for (const call of m.toolCalls ?? []) tokens += text(call.name) + text(JSON.stringify(call.arguments)) + MESSAGE_OVERHEAD_TOKENS;
    if (m.role === 'tool') tokens += text(m.name);
    return tokens;
  };
  const tools = (list: readonly LlmTool[]) =>
    list.reduce((sum, t) => sum + MESSAGE_OVERHEAD_TOKENS + text(t.name) + text(t.description) + text(JSON.stringify(t.parameters)), 0);
  return {
    family,
    factor,
    text,
    message,
    tools,
    request: (r) => (r.system ? text(r.system) + MESSAGE_OVERHEAD_TOKENS : 0) + r.messages.reduce((sum, m) => sum + message(m), 0) + tools(r.tools ?? []),
  };
}

/** The configured budgets of a reply, in estimated tokens (AGENT_* settings). */
export interface ReplyBudget {
  /** The whole window a reply is built in: prompt + answer. */
  readonly contextTokens: number;
  /** Ceiling of the relevant-memories part. */
  readonly memoryTokens: number;
  /** Ceiling of the running summary. */
  readonly summaryTokens: number;
  /** Ceiling of the active-goals part. */
  readonly goalTokens: number;
  /** Reserved for the answer (max_tokens). */
  readonly answerTokens: number;
  /** Turns compaction keeps in full. */
  readonly recentTurns: number;
}

/** Tokens each part of one prompt used (what the reply log line states). */
export interface TokenBreakdown {
  readonly system: number;
  readonly soul: number;
  readonly tools: number;
  readonly memories: number;
  readonly goals: number;
  readonly summary: number;
  readonly recent: number;
  /** Reserved for the answer. */
  readonly reserved: number;
  /** Prompt tokens (everything but `reserved`). */
  readonly prompt: number;
  /** prompt + reserved: never more than the window. */
  readonly total: number;
  readonly window: number;
}

/** The smallest answer reservation when a tiny window leaves less than the configured one. */
export const MIN_ANSWER_TOKENS = 64;

/**
 * The budget for the model's window: the configured ceilings, shrunk where the window is too
 * small to hold them. The answer reservation is never more than a quarter of the window (a
 * 2,048-token window with the default 1,024 answer tokens would leave too little for the
 * conversation), and never less than {@link MIN_ANSWER_TOKENS}.
 */
export function resolveReplyBudget(
  settings: {
    readonly contextTokens?: number;
    readonly memoryTokens: number;
    readonly summaryTokens: number;
    readonly goalTokens: number;
    readonly answerTokens: number;
    readonly recentTurns: number;
  },
  modelWindow: number,
): ReplyBudget {
  const contextTokens = Math.min(settings.contextTokens ?? modelWindow, modelWindow);
  const answerTokens = Math.max(MIN_ANSWER_TOKENS, Math.min(settings.answerTokens, Math.floor(contextTokens / 4)));
  const room = contextTokens - answerTokens;
  return {
    contextTokens,
    answerTokens,
    memoryTokens: Math.min(settings.memoryTokens, Math.floor(room * 0.25)),
    summaryTokens: Math.min(settings.summaryTokens, Math.floor(room * 0.2)),
    goalTokens: Math.min(settings.goalTokens, Math.floor(room * 0.1)),
    recentTurns: settings.recentTurns,
  };
}

/** Cuts `text` to at most `maxTokens` estimated tokens, keeping the start (`head`) or the end. */
export function fitText(text: string, maxTokens: number, estimator: TokenEstimator, keep: 'head' | 'tail' = 'head'): string {
  if (maxTokens <= 0) return '';
  if (estimator.text(text) <= maxTokens) return text;
  let lo = 0;
  let hi = text.length;
  const mark = '…';
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const candidate = keep === 'head' ? text.slice(0, mid) + mark : mark + text.slice(text.length - mid);
    if (estimator.text(candidate) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  if (lo === 0) return '';
  return keep === 'head' ? text.slice(0, lo) + mark : mark + text.slice(text.length - lo);
}
