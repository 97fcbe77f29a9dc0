/**
 * Structured answers: ask a model for JSON, find the JSON in what it wrote, validate it with a
 * zod schema, and give the model exactly one chance to repair a bad answer.
 *
 * Models wrap JSON in code fences or put a sentence before it even when told not to, so the
 * extraction is tolerant; the schema is not. One repair turn (the error sent back, corrected JSON
 * asked for) fixes most slips; a second failure is reported as `invalid_output` rather than
 * retried forever, because a model that failed twice is unlikely to do better on a third call
 * and every call costs tokens.
 *
 * The zod schema also goes to the model, as the answer's JSON Schema (answer-schema.ts): a model
 * with structured outputs then cannot answer outside the shape, and the extraction and repair
 * below are left for what a schema cannot prevent (an answer cut off at the answer limit, a bound
 * the schema could not carry) and for servers that refuse schemas (schema-support.ts).
 */
import { z } from 'zod';
import { answerSchemaOf } from './answer-schema';
import { LlmError, truncate, type LanguageModel, type LlmMessage, type LlmRequest, type LlmResponse } from './language-model';

export interface StructuredOptions {
  /** How much of the model's text an `invalid_output` error quotes; default 500 characters. */
  readonly quoteChars?: number;
}

export interface StructuredResult<T> {
  readonly value: T;
  /** Every response, in order (1 without repair, 2 with): callers count calls and tokens from them. */
  readonly responses: readonly LlmResponse[];
}

/** Why a text could not be used, worded for the model (it is sent back in the repair turn). */
type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

const MAX_CANDIDATES = 20;

/** Where a JSON value (an object or array) that starts at `start` ends; string-aware. */
type JsonEnd = { readonly end: number } | { readonly mismatch: true } | { readonly incomplete: true };

function endOfJson(text: string, start: number): JsonEnd {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i]!;
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') stack.push(char === '{' ? '}' : ']');
    else if (char === '}' || char === ']') {
      if (stack.pop() !== char) return { mismatch: true };
      if (stack.length === 0) return { end: i + 1 };
    }
  }
  return { incomplete: true };
}

/**
 * The first JSON object (or array) in `text`: the whole text, else the content of a ```json
 * fence, else the first balanced `{...}`/`[...]` that parses. Throws a SyntaxError saying what
 * was wrong when there is none.
 */
export function extractJson(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') throw new SyntaxError('the answer was empty');
  try {
    return JSON.parse(trimmed);
  } catch {
    // Not bare JSON: look inside.
  }
  const fence = /```[a-zA-Z]*\s*\n?([\s\S]*?)```/.exec(trimmed);
  if (fence) {
    try {
      return JSON.parse(fence[1]!.trim());
    } catch {
      // A fence with something else in it: fall through to scanning.
    }
  }
  let tried = 0;
  let firstError: string | undefined;
  for (let start = 0; start < trimmed.length && tried < MAX_CANDIDATES; start++) {
    const char = trimmed[start];
    if (char !== '{' && char !== '[') continue;
    tried++;
    const found = endOfJson(trimmed, start);
    if ('incomplete' in found) {
      // The answer was cut off inside this value: every later bracket is part of it (an inner
      // object of a truncated answer), so there is no whole answer to find. Taking an inner
      // object would turn a cut answer into a valid but emptied one.
      throw new SyntaxError('the JSON is incomplete (unbalanced brackets or braces; was the answer cut off?)');
    }
    if ('mismatch' in found) {
      firstError ??= 'the JSON has mismatched brackets or braces';
      continue;
    }
    try {
      return JSON.parse(trimmed.slice(start, found.end));
    } catch (error) {
      firstError ??= `the JSON does not parse: ${(error as Error).message}`;
    }
  }
  throw new SyntaxError(firstError ?? 'the answer contains no JSON object');
}

function parseWith<T>(text: string, schema: z.ZodType<T>): Parsed<T> {
  let json: unknown;
  try {
    json = extractJson(text);
  } catch (error) {
    return { ok: false, problem: `Your answer is not valid JSON: ${(error as Error).message}.` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: `Your JSON does not match the required shape:\n${z.prettifyError(result.error)}` };
}

/**
 * Completes `request` as JSON and validates it with `schema`; one repair turn on failure.
 * Throws {@link LlmError} `invalid_output` when the repaired answer is still unusable (and
 * whatever the model call throws otherwise).
 */
export async function completeStructured<T>(
  model: LanguageModel,
  request: LlmRequest,
  schema: z.ZodType<T>,
  options: StructuredOptions = {},
): Promise<StructuredResult<T>> {
  const quoteChars = options.quoteChars ?? 500;
  const answerSchema = answerSchemaOf(schema);
  const first = await model.complete({ ...request, json: true, answerSchema });
  const firstParsed = parseWith(first.text, schema);
  if (firstParsed.ok) return { value: firstParsed.value, responses: [first] };

  const repairMessages: LlmMessage[] = [
    ...request.messages,
    // An empty assistant turn is refused by some providers; say that it was empty instead.
    { role: 'assistant', content: first.text.trim() === '' ? '(empty answer)' : first.text },
    {
      role: 'user',
      content: `${firstParsed.problem}\n\nReply again with only the corrected JSON object: no prose, no code fences.`,
    },
  ];
  const second = await model.complete({ ...request, messages: repairMessages, json: true, answerSchema });
  const secondParsed = parseWith(second.text, schema);
  if (secondParsed.ok) return { value: secondParsed.value, responses: [first, second] };

  const quoted = JSON.stringify(truncate(second.text, quoteChars));
  const cutOff = second.stopReason === 'max_tokens';
  throw new LlmError(
    `The ${model.provider} model "${model.model}" gave no usable JSON for "${request.purpose}" after one repair attempt. ${secondParsed.problem} The answer was: ${quoted}`,
    {
      reason: 'invalid_output',
      provider: model.provider,
      model: model.model,
      attempts: 2,
      details: {
        purpose: request.purpose,
        cutOff,
        inputTokens: first.usage.inputTokens + second.usage.inputTokens,
        outputTokens: first.usage.outputTokens + second.usage.outputTokens,
      },
      hint: 'The model may be too small for this task, or the answer was cut off (raise maxTokens); the call was not retried further.',
    },
  );
}

/**
 * Whether a structured call failed because the answer was cut off at the answer limit (the
 * repaired answer too): asking about less at once may fit where repairing cannot.
 */
export function isCutOff(error: unknown): boolean {
  return error instanceof LlmError && error.reason === 'invalid_output' && error.details?.cutOff === true;
}
