/**
 * Token estimates without a tokenizer (none of the models' tokenizers installs offline for every
 * provider). Byte-pair tokenizers of current chat models produce about one token per 4 characters
 * of English prose and about 0.75 words per token; text with many short words, digits or symbols
 * runs higher per character. The estimate takes the larger of the two readings, so it errs on
 * the side of packing less than fits rather than more. The model's own count comes back with
 * every call (LlmCall rows), which is what budgets and figures use after the fact.
 */
const WORD = /[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu;

export function estimateTokens(text: string): number {
  if (text === '') return 0;
  const byChars = text.length / 4;
  const pieces = text.match(WORD)?.length ?? 0;
  const byWords = pieces * 0.75 + (pieces > 0 ? 1 : 0);
  return Math.ceil(Math.max(byChars, byWords));
}
