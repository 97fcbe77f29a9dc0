/**
 * Sizing a prompt to a model's context window: the instructions, the prompt and the answer the
 * model may write must all fit, or a small local model silently drops the start of the prompt
 * (Ollama truncates to `num_ctx`) and answers about half of what it was shown.
 *
 * Counts are estimates before sending: about 4 characters a token for English, budgeted at 3 (the
 * safe side), like consolidation's packing (`sleep/consolidation/grouping.ts`).
 */

/** Characters budgeted per token of the window (English runs about 4; 3 leaves a margin). */
export const CHARS_PER_TOKEN = 3;
/** Tokens kept for the request's framing (roles, JSON, the provider's own wrapping). */
const FRAMING_TOKENS = 100;
/** No prompt is sized below this, even for a window too small for the instructions. */
const MIN_PROMPT_CHARS = 400;
/** An answer never takes more than this share of the window. */
const ANSWER_SHARE = 0.25;

export interface PromptSize {
  /** Tokens the model may answer with: the caller's wish, never above a quarter of the window. */
  readonly maxAnswerTokens: number;
  /** Characters of prompt text (the user turn) that fit beside the instructions and the answer. */
  readonly maxPromptChars: number;
}

/** How much a call may ask and answer in `contextWindow` tokens, given its system instructions. */
export function promptSizeFor(params: { readonly contextWindow: number; readonly system: string; readonly maxAnswerTokens: number }): PromptSize {
  const maxAnswerTokens = Math.max(64, Math.min(params.maxAnswerTokens, Math.floor(params.contextWindow * ANSWER_SHARE)));
  const systemTokens = Math.ceil(params.system.length / CHARS_PER_TOKEN);
  const left = params.contextWindow - maxAnswerTokens - systemTokens - FRAMING_TOKENS;
  return { maxAnswerTokens, maxPromptChars: Math.max(MIN_PROMPT_CHARS, left * CHARS_PER_TOKEN) };
}

/**
 * The longest prefix of `items` whose rendered lines (one line each, newline included) fit in
 * `maxChars`; callers order items most useful first. At least one item is kept when there is any,
 * so a prompt is never empty (its line is what a caller must cut, when it is too long alone).
 */
export function takeWithin<T>(items: readonly T[], render: (item: T) => string, maxChars: number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    const size = render(item).length + 1;
    if (kept.length > 0 && used + size > maxChars) break;
    kept.push(item);
    used += size;
  }
  return kept;
}
