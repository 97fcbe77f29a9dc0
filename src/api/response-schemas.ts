/**
 * Response schemas of the admin API: what each route answers, in its JSON form (a stored date is
 * an ISO 8601 string, as the client reads it). They are published in `/openapi.json` and on
 * `/docs`, and every JSON answer is checked against its route's schema as it is serialized
 * (response-serializer.ts). Envelopes the routes build are closed objects; the records the domain
 * hands over (memories, episodes, audit events, scopes) are open: their main fields are
 * described, and a column added later reaches the client without a change here.
 */
import { z } from 'zod';
import { SCOPE_EXPORT_FORMAT, SCOPE_EXPORT_VERSION } from '../export/scope-document';

/**
 * A stored date. The schema (published, and checked against the JSON text) is an ISO 8601
 * string; the type says Date too, since a handler hands the record over with its Date and
 * JSON.stringify writes the string.
 */
const isoDate = z.iso.datetime({ offset: true }) as unknown as z.ZodType<Date | string>;
const count = z.number().int().min(0);
/** A JSON value a record keeps as given (metadata, audit snapshots). */
const anyJson = z.unknown();

/** The body of every refused request: 400 (`detail`, `problems` for a bad part), 401, 404, 409, 500. */
export const errorResponse = z.object({
  error: z.string(),
  detail: z.string().optional(),
  code: z.string().optional(),
  problems: z.array(z.object({ field: z.string(), problem: z.string() })).optional(),
});

/** The error answers every route may give, for the OpenAPI document and the serializer. */
export const errorResponses = { '4xx': errorResponse, '5xx': errorResponse } as const;

/**
 * A record the domain hands over: the fields named are described, any other passes to the client
 * (the published schema allows more properties). Typed as the closed object, so a domain
 * interface (which has no index signature) is accepted as the handler's answer.
 */
function record<S extends z.ZodRawShape>(shape: S): z.ZodObject<S> {
  return z.looseObject(shape) as unknown as z.ZodObject<S>;
}

const auditEvent = record({
  id: z.string(),
  scopeId: z.string(),
  runId: z.string().nullable(),
  action: z.string(),
  subjectType: z.string(),
  subjectId: z.string().nullable(),
  before: anyJson,
  after: anyJson,
  reason: z.string().nullable(),
  createdAt: isoDate,
});

const memory = record({
  id: z.string(),
  scopeId: z.string(),
  category: z.string(),
  content: z.string(),
  confidence: z.number(),
  importance: z.number(),
  active: z.boolean(),
  sourceType: z.string(),
  validFrom: isoDate,
  validTo: isoDate.nullable(),
  supersededById: z.string().nullable(),
  createdAt: isoDate,
  updatedAt: isoDate,
});

const episode = record({
  id: z.string(),
  scopeId: z.string(),
  channel: z.string(),
  role: z.string(),
  author: z.string().nullable(),
  content: z.string(),
  timestamp: isoDate,
  conversationId: z.string().nullable(),
  externalId: z.string().nullable(),
  metadata: anyJson,
  consolidated: z.boolean(),
  createdAt: isoDate,
});

const memoryLink = record({ id: z.string(), fromId: z.string(), toId: z.string(), kind: z.string(), score: z.number().nullable() });

/** GET /scopes. */
export const scopesResponse = z.object({
  scopes: z.array(
    record({
      id: z.string(),
      key: z.string(),
      channel: z.string(),
      kind: z.string(),
      title: z.string().nullable(),
      episodeCount: count,
      memoryCount: count,
      lastMessageAt: isoDate.nullable(),
      createdAt: isoDate,
    }),
  ),
});

/** GET /scopes/:id/memories: one page of the listing. */
/** PATCH /scopes/:id/memories/:mid: the memory after the change. */
export const memoryChangeResponse = z.object({ memory });

export const memoriesResponse = z.object({ total: count, offset: count, limit: count, memories: z.array(memory) });

/** GET /scopes/:id/memories/:mid: the memory with its sources and links, and its audit history. */
export const memoryDetailResponse = z.object({
  memory: record({
    ...memory.shape,
    sources: z.array(
      record({
        episode: z.object({ id: z.string(), externalId: z.string().nullable(), content: z.string(), timestamp: isoDate, role: z.string() }),
      }),
    ),
    linksFrom: z.array(memoryLink),
    linksTo: z.array(memoryLink),
  }),
  history: z.array(auditEvent),
});

/** DELETE /scopes/:id/memories/:mid: the memory and what was derived from it only. */
export const forgetMemoryResponse = z.object({ success: z.literal(true), removed: count });
/** DELETE /scopes/:id/memories: every row of the scope. */
export const purgeResponse = z.object({ success: z.literal(true), deletedCount: count });

/** POST /scopes/:id/search. */
export const searchResponse = z.object({
  results: z.array(
    record({
      kind: z.enum(['episode', 'memory']),
      id: z.string(),
      externalId: z.string().nullable(),
      content: z.string(),
      timestamp: isoDate,
      score: z.number(),
      /** Each signal's share of the score (semantic, keyword, recency, ...), the ones that applied. */
      parts: z.record(z.string(), z.number()) as unknown as z.ZodType<object>,
      sourceEpisodes: z
        .array(z.object({ id: z.string(), externalId: z.string().nullable() }))
        .readonly()
        .optional(),
      conversationId: z.string().nullable().optional(),
      role: z.string().optional(),
      author: z.string().nullable().optional(),
      category: z.string().optional(),
      confidence: z.number().optional(),
      faded: z.boolean().optional(),
    }),
  ),
  /** Why a part of the search was left out (e.g. vectors unavailable). */
  notes: z.array(z.string()),
});

/** GET /scopes/:id/episodes. */
export const episodesResponse = z.object({ episodes: z.array(episode) });
/** GET /scopes/:id/audit: the latest events first. */
export const auditResponse = z.object({ events: z.array(auditEvent) });

/** GET and PATCH /scopes/:id/settings: the digest schedule and the scope controls, with which are defaults. */
export const settingsResponse = z.object({
  scope: z.string(),
  id: z.string(),
  digestTime: z.string(),
  digestTimeIsDefault: z.boolean(),
  digestEnabled: z.boolean(),
  timezone: z.string(),
  timezoneIsDefault: z.boolean(),
  nextDigest: isoDate.nullable(),
  digestDelivered: z.boolean(),
  cappedMode: z.boolean(),
  memoryCap: count.nullable(),
  sleepWindow: z.string().nullable(),
  sleepWindowIsDefault: z.boolean(),
  inSleepWindow: z.boolean(),
  nextSleepWindow: isoDate.nullable(),
  sleepDailyTokenBudget: count,
  sleepDailyTokenBudgetIsDefault: z.boolean(),
  replyDailyBudget: count,
  replyDailyBudgetIsDefault: z.boolean(),
});

const consolidationOutcome = z.object({
  status: z.enum(['succeeded', 'failed', 'deferred', 'skipped']),
  detail: z.string().optional(),
  runId: z.string().optional(),
});

/** POST /scopes/:id/sleep: the dry run's plan, a run's outcome, or the retried messages and the run. */
export const sleepResponse = z.union([
  z.object({ status: z.enum(['applied', 'planned', 'empty', 'deferred', 'failed']), plan: anyJson, llmCalls: count }),
  z.object({ outcome: consolidationOutcome }),
  z.object({ retried: count, outcome: consolidationOutcome, givenUp: count }),
]);

/**
 * The JSON export's outline: its format, version, scope and sections, each row an object (every
 * column is listed in docs/export.md). Not the import's full schema: its JSON columns are a
 * recursive type, which the OpenAPI transform cannot reference.
 */
const exportDocument = record({
  format: z.literal(SCOPE_EXPORT_FORMAT),
  version: z.literal(SCOPE_EXPORT_VERSION),
  scope: record({ id: z.string(), key: z.string(), channel: z.string(), kind: z.string() }),
  profile: record({}).nullable(),
  ...Object.fromEntries(
    ['conversations', 'episodes', 'memories', 'memoryLinks', 'entities', 'digests', 'reminders', 'sleepRuns', 'auditEvents'].map((section) => [
      section,
      z.array(record({ id: z.string() })),
    ]),
  ),
});

/** GET /scopes/:id/export: the JSON export document (docs/export.md) or its Markdown rendering. */
export const exportResponse = {
  description: 'The JSON export (format=json) or its Markdown files joined (format=markdown).',
  content: { 'application/json': { schema: exportDocument }, 'text/markdown': { schema: z.string() } },
};

/** POST /scopes/:id/import: 200 into an existing scope, 201 into one the import created. */
export const importResponse = z.object({
  scopeId: z.string(),
  scopeKey: z.string(),
  mode: z.enum(['exact', 'copy']),
  counts: z.record(z.string(), count),
});

/** GET /healthz: the process answers. */
export const healthResponse = z.object({ status: z.literal('ok') });
/** GET /readyz: 200 when the database answers, 503 when not; each check's state. */
export const readyResponse = z.object({
  status: z.enum(['ready', 'not ready']),
  checks: z.record(z.string(), z.string()),
  telegram: z.object({ lastPollAt: isoDate.nullable(), maxAgeSeconds: z.number() }).optional(),
});
/** GET /metrics: the Prometheus text format. */
export const metricsResponse = {
  description: 'Prometheus text exposition format 0.0.4.',
  content: { 'text/plain': { schema: z.string() } },
};

const joinedScope = z.object({ id: z.string(), key: z.string() });
const mergeCounts = z.object({ moved: z.record(z.string(), count), foldedMemories: count }).nullable();

/** GET /links. */
export const linksResponse = z.object({
  links: z.array(
    record({
      identityKey: z.string(),
      scopeId: z.string(),
      scopeKey: z.string().nullable(),
      state: z.string(),
      createdAt: isoDate,
      updatedAt: isoDate,
    }),
  ),
});
/** POST /links and POST /links/redeem: the scope both identities speak into, and what was merged. */
export const joinResponse = z.object({ identity: z.string(), scope: joinedScope, merge: mergeCounts });
/** DELETE /links/:identity: whether it was linked. */
export const unlinkResponse = z.object({ identity: z.string(), unlinked: z.boolean() });
/** POST /links/codes: a one-time code and when it expires. */
export const linkCodeResponse = z.object({ code: z.string(), expiresAt: isoDate });
