/**
 * Request schemas of the admin API, written once in zod. Routes are given the zod schemas
 * themselves (fastify-type-provider-zod's `jsonSchemaTransform` turns them into the OpenAPI
 * document), and the server validates every request with them (`validatorFor`, the server's
 * validator compiler): one set of rules, one wording of the reasons. Numbers are built by {@link integerIn} and {@link numberIn},
 * which refuse what is not a finite number in range (`Infinity`, `1e400`, `NaN`, `1.5` for an
 * integer) and say which range is allowed.
 */
import { z } from 'zod';
import { MAX_MEMORY_CAP, MAX_REPLY_BUDGET, MAX_SLEEP_TOKEN_BUDGET } from '../memory/scopes/scope-controls';

/** An integer from `min` to `max` (a query string's text is read as a number). */
export function integerIn(min: number, max: number) {
  const range = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ error: range }).int({ error: range }).min(min, { error: range }).max(max, { error: range });
}

/** A finite number from `min` to `max` (a query string's text is read as a number). */
export function numberIn(min: number, max: number) {
  const range = `must be a number from ${min} to ${max}`;
  return z.coerce.number({ error: range }).min(min, { error: range }).max(max, { error: range });
}

/** The same rules for a JSON body's numbers, which must be JSON numbers (`1e400` parses to Infinity and is refused). */
function jsonIntegerIn(min: number, max: number) {
  const range = `must be an integer from ${min} to ${max}`;
  return z.number({ error: range }).int({ error: range }).min(min, { error: range }).max(max, { error: range });
}
function jsonNumberIn(min: number, max: number) {
  const range = `must be a number from ${min} to ${max}`;
  return z.number({ error: range }).min(min, { error: range }).max(max, { error: range });
}

/** Largest `offset` of a listing (far beyond any scope's memories; Infinity is not an offset). */
export const MAX_OFFSET = 1_000_000;

export const scopeParams = z.object({ id: z.string().min(1).max(100) });
export const memoryParams = z.object({ id: z.string().min(1).max(100), mid: z.string().min(1).max(100) });

export const memoriesQuery = z.object({
  /** active (default), all (faded and superseded too) */
  state: z.enum(['active', 'all']).default('active'),
  category: z.string().min(1).max(40).optional(),
  minConfidence: numberIn(0, 1).optional(),
  limit: integerIn(1, 500).default(50),
  offset: integerIn(0, MAX_OFFSET).default(0),
});

export const episodesQuery = z.object({
  since: z.iso.datetime({ offset: true }).optional(),
  limit: integerIn(1, 500).default(50),
});

export const auditQuery = z.object({ limit: integerIn(1, 500).default(50) });

export const searchBody = z.object({
  query: z.string().min(1).max(2_000).optional(),
  strategy: z.enum(['hybrid', 'semantic', 'keyword', 'temporal']).default('hybrid'),
  limit: jsonIntegerIn(1, 200).default(10),
  kinds: z
    .array(z.enum(['episode', 'memory']))
    .min(1)
    .optional(),
  includeInactive: z.boolean().optional(),
  minConfidence: jsonNumberIn(0, 1).optional(),
  minSourceTrust: jsonNumberIn(0, 1).optional(),
  /** Episodes tagged with one of these topics or entities (given at import or learned during sleep). */
  topics: z.array(z.string().trim().min(1).max(128)).max(20).optional(),
  entities: z.array(z.string().trim().min(1).max(256)).max(20).optional(),
});

export const exportQuery = z.object({ format: z.enum(['json', 'markdown']).default('json') });
export const importQuery = z.object({ mode: z.enum(['exact', 'copy']).default('exact') });
/** POST /scopes/:id/sleep: a dry run, or (`retryGivenUp`) the messages consolidation gave up on tried again first. */
export const sleepBody = z.object({ dryRun: z.boolean().default(false), retryGivenUp: z.boolean().default(false) });
/**
 * PATCH /scopes/:id/settings: any of these; absent fields stay as they are, null returns a field
 * to the service default (capped mode: off). Ranges are the scope controls' (scope-controls.ts).
 */
export const settingsBody = z
  .object({
    digestTime: z
      .string()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM, 24-hour, e.g. 21:30')
      .optional(),
    digestEnabled: z.boolean().optional(),
    timezone: z.string().min(1).max(64).optional(),
    /** true: capped mode on (the current cap, else 10); false: off. */
    cappedMode: z.boolean().optional(),
    /** A cap turns capped mode on; null turns it off. */
    memoryCap: jsonIntegerIn(1, MAX_MEMORY_CAP).nullable().optional(),
    /** `HH:00-HH:00` in the scope's zone (`00:00-24:00`: all day); null: the service's window. */
    sleepWindow: z.string().min(1).max(32).nullable().optional(),
    /** Sleep's model tokens per local day; 0 = unlimited; null: SLEEP_DAILY_TOKEN_BUDGET. */
    sleepDailyTokenBudget: jsonIntegerIn(0, MAX_SLEEP_TOKEN_BUDGET).nullable().optional(),
    /** Replies per local day; 0 = unlimited; null: REPLY_DAILY_BUDGET. */
    replyDailyBudget: jsonIntegerIn(0, MAX_REPLY_BUDGET).nullable().optional(),
  })
  .strict()
  .refine((body) => !(body.cappedMode === false && typeof body.memoryCap === 'number'), {
    message: 'cappedMode false and a memoryCap contradict each other: send one of them',
    path: ['cappedMode'],
  });

/**
 * The schema a route is given. Routes take zod schemas directly now (the server's validator and
 * the OpenAPI transform read them); kept so route code written with it still validates the same.
 * @deprecated give the zod schema itself.
 */
export function jsonSchema<T extends z.ZodType>(schema: T): T {
  return schema;
}

/** A refused request part: `validation` lists every problem; the message names each parameter and its rule. */
export class RequestValidationError extends Error {
  readonly statusCode = 400;
  constructor(readonly validation: ReadonlyArray<{ field: string; problem: string }>) {
    super(validation.map((v) => `${v.field}: ${v.problem}`).join('; '));
  }
}

/**
 * The validator fastify runs for a route part (params, querystring, body), given as a zod schema:
 * the schema's parsed value, or a {@link RequestValidationError}. Not the type provider's own
 * `validatorCompiler`, whose error reads differently: clients and tests rely on "field: problem".
 */
export function validatorFor(schema: unknown, part: string): (data: unknown) => { value: unknown } | { error: Error } {
  if (!(schema instanceof z.ZodType)) throw new Error(`the admin API validates with zod: the route's ${part} schema is not a zod schema`);
  const zod = schema;
  return (data) => {
    // fastify hands a missing body or query string over as null: nothing given, every default.
    const input = data ?? {};
    const result = zod.safeParse(input);
    if (result.success) return { value: result.data };
    return {
      error: new RequestValidationError(
        // What was sent is not echoed: it may be a secret pasted into the wrong place.
        result.error.issues.map((issue) => ({ field: issue.path.length > 0 ? issue.path.join('.') : part, problem: issue.message })),
      ),
    };
  };
}
