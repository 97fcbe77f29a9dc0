/**
 * Whether a model takes answer schemas, learned from the server's answer rather than configured:
 * an older Ollama, a model without structured outputs or a proxy in front of the API refuses the
 * field with a 400 that names it. The refused call is sent again without the schema (the JSON is
 * then found and repaired as before, see structured.ts), the switch is logged once, and the
 * adapter stops sending schemas for its model, so each later call costs one request, not two.
 */
import type { Logger } from '../shared/logger';
import { LlmError, type LlmRequest } from './language-model';

export interface SchemaSupport {
  /** Whether this request should carry its answer schema. */
  sends(request: LlmRequest): boolean;
  /**
   * Runs `send` with the schema when it should carry one; when the server refuses the schema,
   * remembers that and runs `send` once more without it.
   */
  attempt<T>(request: LlmRequest, send: (withSchema: boolean) => Promise<T>): Promise<T>;
}

/**
 * `refusal` matches the error text a server gives when it does not take the schema (the field's
 * name, or the schema keyword it stumbled on), so that other 400s still fail as they did.
 */
export function createSchemaSupport(params: { readonly model: string; readonly logger: Logger; readonly refusal: RegExp }): SchemaSupport {
  let refused = false;
  const sends = (request: LlmRequest) => !refused && request.json === true && request.answerSchema !== undefined;
  return {
    sends,
    async attempt(request, send) {
      if (!sends(request)) return send(false);
      try {
        return await send(true);
      } catch (error) {
        if (!(error instanceof LlmError) || error.status !== 400 || !params.refusal.test(error.message)) throw error;
        if (!refused) {
          refused = true;
          params.logger.warn('the model refused the answer schema; JSON answers are now asked for in the prompt and repaired when needed', {
            model: params.model,
            purpose: request.purpose,
            error: error.message,
          });
        }
        return send(false);
      }
    },
  };
}
