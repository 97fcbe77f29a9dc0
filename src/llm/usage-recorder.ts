/**
 * Usage recording: one `LlmCall` row per model call, success or failure, so that daily token
 * budgets per scope can be enforced and costs explained ("what did last night's sleep spend?").
 *
 * A decorator rather than code in each adapter: every adapter gets it, and tests can use a model
 * without a database. A failed write is logged and does not fail the call: losing a usage row is
 * better than losing the answer the tokens were already spent on.
 */
import { AppError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { redactSecrets } from '../shared/redact';
import type { PrismaClient } from '../storage/prisma';
import { truncate, type LanguageModel, type LlmRequest, type LlmResponse } from './language-model';

const MAX_ERROR_CHARS = 500;

/** The error as stored in `LlmCall.error`: code and message, redacted and bounded. */
function describeError(error: unknown): string {
  const text = error instanceof AppError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return truncate(redactSecrets(text), MAX_ERROR_CHARS);
}

/**
 * Wraps `model` so that each `complete` writes a row to `LlmCall` (awaited, before the call
 * returns or throws). Rows carry the request's purpose, scope and run, and the prompt-cache
 * tokens apart (they are part of the input tokens, but priced differently).
 */
export function withUsageRecording(model: LanguageModel, prisma: PrismaClient, logger: Logger): LanguageModel {
  const log = logger.child({ component: 'llm-usage' });

  async function record(request: LlmRequest, outcome: { response?: LlmResponse; error?: unknown; durationMs: number }): Promise<void> {
    const { response, error } = outcome;
    try {
      await prisma.llmCall.create({
        data: {
          scopeId: request.scopeId ?? null,
          runId: request.runId ?? null,
          purpose: request.purpose,
          provider: response?.provider ?? model.provider,
          model: response?.model ?? model.model,
          inputTokens: response?.usage.inputTokens ?? 0,
          outputTokens: response?.usage.outputTokens ?? 0,
          cacheReadTokens: response?.usage.cacheReadTokens ?? 0,
          cacheWriteTokens: response?.usage.cacheWriteTokens ?? 0,
          durationMs: Math.round(response?.durationMs ?? outcome.durationMs),
          status: response ? 'ok' : 'error',
          error: error === undefined ? null : describeError(error),
        },
      });
    } catch (writeError) {
      log.error('could not record model usage', { purpose: request.purpose, scopeId: request.scopeId, error: writeError });
    }
  }

  return {
    provider: model.provider,
    model: model.model,
    contextWindow: model.contextWindow,
    async complete(request) {
      const started = performance.now();
      let response: LlmResponse;
      try {
        response = await model.complete(request);
      } catch (error) {
        await record(request, { error, durationMs: performance.now() - started });
        throw error;
      }
      await record(request, { response, durationMs: response.durationMs });
      return response;
    },
    close: () => model.close(),
  };
}

/**
 * Tokens (input + output) the model spent for `scopeId` since `since`, failed calls included
 * (they record 0). `null` sums the calls that belong to no scope.
 */
export async function tokensUsedSince(prisma: PrismaClient, scopeId: string | null, since: Date): Promise<number> {
  const result = await prisma.llmCall.aggregate({
    where: { scopeId, createdAt: { gte: since } },
    _sum: { inputTokens: true, outputTokens: true },
  });
  return (result._sum.inputTokens ?? 0) + (result._sum.outputTokens ?? 0);
}
