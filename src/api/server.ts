/**
 * The admin HTTP API (fastify: schema validation on every route from JSON Schema, which
 * @fastify/swagger turns into the OpenAPI document; hooks for auth; light and fast). Bound to
 * 127.0.0.1 by default; every route but /healthz and /readyz needs `Authorization: Bearer
 * <ADMIN_TOKEN>`. A scope in the path (its id, or its key such as `telegram:private:42`) scopes
 * every query: another scope's memory id in it answers 404, never data.
 *
 * The server is given the domain services it uses by name; every stored text it returns comes
 * from them, through the output filter.
 */
import Fastify, { errorCodes, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { ScopeArchive } from '../export/scope-archive';
import type { AuditLog } from '../memory/audit/audit-log';
import type { EmbeddingWorker } from '../memory/embeddings/embedding-worker';
import type { EpisodeLog } from '../memory/episodes/episode-log';
import type { ForgetService } from '../memory/forget/forget-service';
import type { MemoryCatalog } from '../memory/memories/memory-catalog';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import type { DigestSchedule, DigestScheduleService } from '../memory/scopes/digest-schedule';
import {
  checkControlsChange,
  parseSleepWindow,
  scopeControlsJson,
  type ScopeControls,
  type ScopeControlsChange,
  type ScopeControlsView,
} from '../memory/scopes/scope-controls';
import type { IndexGuard } from '../memory/vectors/index-guard';
import { AppError, NotFoundError, ValidationError } from '../shared/errors';
import { uuidv7 } from '../shared/ids';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics';
import type { SleepScheduler } from '../sleep/scheduler';
import type { GivenUpMessages } from '../sleep/given-up';
import type { SleepService } from '../sleep/sleep-service';
import type { StoreStats } from '../memory/store-stats';
import type { PollHealth } from '../shared/poll-health';
import { bearerMatches } from './auth';
import { MCP_PATH, registerMcpRoute } from './mcp-route';
import type { McpDoorServices } from '../mcp/memory-server';
import type { ScopeTokens } from '../memory/scopes/scope-tokens';
import { renderMetrics } from './metrics-endpoint';
import { registerLinkRoutes } from './link-routes';
import { registerWebRoutes, type WebRouteServices } from './web-routes';
import { registerMemoryChangeRoute } from './memory-change-route';
import type { MemoryCorrections } from '../memory/memories/memory-corrections';
import { renderDocsPage, type OpenApiDocument } from './docs-page';
import { registerWebPage } from './web-page';
import { joinMarkdownFiles, renderMarkdownExport } from '../export/markdown-export';
import { removeImportFile, spoolToFile, SpoolTooLarge, type ImportFile } from '../export/import-file';
import { serializeScopeExport } from '../export/scope-document';
import {
  auditQuery,
  episodesQuery,
  exportQuery,
  importQuery,
  jsonSchema,
  memoriesQuery,
  memoryParams,
  scopeParams,
  searchBody,
  settingsBody,
  sleepBody,
  RequestValidationError,
  validatorFor,
} from './schemas';
import { asSentence } from '../shared/sentence';

/** Largest JSON export POST /scopes/:id/import takes (a scope of ~100,000 episodes). */
const IMPORT_BODY_LIMIT = 256 * 1024 * 1024;

/** What the admin API is given: its token and logger, and the services its routes use. */
export interface ApiOptions {
  readonly token: string;
  readonly logger: Logger;
  readonly directory: Pick<ScopeDirectory, 'find' | 'require' | 'list'>;
  readonly catalog: Pick<MemoryCatalog, 'list' | 'detail'>;
  readonly episodeLog: Pick<EpisodeLog, 'list'>;
  readonly auditLog: Pick<AuditLog, 'latest'>;
  readonly archive: ScopeArchive;
  readonly forget: Pick<ForgetService, 'forgetMemory' | 'purgeScope'>;
  readonly search: HybridSearch;
  /** The dry run of `POST /scopes/:id/sleep`. */
  readonly sleep: Pick<SleepService, 'planNextBatch'>;
  readonly scheduler: Pick<SleepScheduler, 'consolidateNow'>;
  /** `POST /scopes/:id/sleep` with `retryGivenUp`: the messages consolidation gave up on, tried again (audited). */
  readonly givenUp?: Pick<GivenUpMessages, 'retry' | 'count'>;
  /** A scope's digest time, on/off and time zone (GET/PATCH /scopes/:id/settings). */
  readonly digestSchedule: Pick<DigestScheduleService, 'get' | 'set'>;
  /** A scope's capped mode, sleep window and daily budgets (the same routes). */
  readonly scopeControls: Pick<ScopeControls, 'get' | 'set'>;
  readonly storeStats: Pick<StoreStats, 'ping' | 'counts'>;
  readonly indexGuard: Pick<IndexGuard, 'state'>;
  readonly metrics: Pick<Metrics, 'render'>;
  readonly embeddingWorker: Pick<EmbeddingWorker, 'pending'>;
  /** The time zone of Markdown exports' daily files when a scope has none of its own. */
  readonly timeZone: string;
  /** Whether the Telegram bot is still polling, when Telegram runs (reported by /readyz). */
  readonly telegramPolling?: () => PollHealth;
  /** Where import bodies are spooled (encrypted, removed after the answer); the system's temporary folder by default. */
  readonly spoolDir?: string;
  /**
   * The MCP endpoint (`/mcp`, api/mcp-route.ts): the services its tools use and the people's
   * tokens it accepts besides the admin token. No endpoint when absent.
   */
  readonly mcp?: { readonly services: McpDoorServices; readonly tokens: Pick<ScopeTokens, 'verify'> };
  /** Linked identities (`/links`, api/link-routes.ts); no routes when absent. */
  readonly links?: Parameters<typeof registerLinkRoutes>[1];
  /** The memory page's data (`/app/login`, `/app/api/*`, api/web-routes.ts); no routes when absent. */
  readonly web?: WebRouteServices;
  /** Correcting and pinning a memory (`PATCH /scopes/:id/memories/:mid`); no route when absent. */
  readonly corrections?: Pick<MemoryCorrections, 'correct' | 'pin'>;
}

/**
 * Routes answered without the token: the probes, and the reference page, which a browser opens
 * by its address (it cannot send a bearer header) and which holds no data, only the API's shape.
 */
const OPEN_ROUTES = new Set(['/healthz', '/readyz', '/docs']);

/** Paths of the memory page (`/app`, its assets, `/app/login`, `/app/api/*`): not behind ADMIN_TOKEN. */
function isWebPagePath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === '/app' || path.startsWith('/app/');
}

export async function createApiServer(options: ApiOptions): Promise<FastifyInstance> {
  const { directory, catalog, episodeLog, auditLog, archive, forget, search, sleep, scheduler, storeStats } = options;
  const log = options.logger.child({ component: 'api' });
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  // Every request part is validated by the zod schema its JSON Schema came from (schemas.ts):
  // ajv's coercion let `limit=Infinity` through to a 500; zod refuses it, naming the range.
  app.setValidatorCompiler(({ schema, httpPart }) => validatorFor(schema, httpPart ?? 'request'));
  await app.register(swagger, {
    openapi: {
      info: { title: 'Nocturne admin API', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    if (OPEN_ROUTES.has(request.routeOptions.url ?? '')) return;
    // The memory page and its data prove who they are for themselves (web-routes.ts).
    if (isWebPagePath(request.url)) return;
    // A person's token is accepted there too: the route checks the bearer itself.
    if (options.mcp && request.routeOptions.url === MCP_PATH) return;
    if (!bearerMatches(request.headers.authorization, options.token)) {
      await reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'missing or wrong bearer token' });
    }
  });

  app.setErrorHandler(async (caught, _request, reply) => {
    const error = caught instanceof Error ? caught : new Error(String(caught));
    const status = (error as { statusCode?: number }).statusCode;
    if ((error as { validation?: unknown }).validation)
      return reply
        .code(400)
        .send({ error: 'Invalid request', detail: asSentence(error.message), ...(error instanceof RequestValidationError && { problems: error.validation }) });
    if (error instanceof NotFoundError) return reply.code(404).send({ error: asSentence(error.message) });
    if (error instanceof AppError && error.code === 'import.conflict') return reply.code(409).send({ error: asSentence(error.message), code: error.code });
    if (error instanceof AppError && error.category === 'user') return reply.code(400).send({ error: asSentence(error.message), code: error.code });
    if (status && status >= 400 && status < 500) return reply.code(status).send({ error: asSentence(error.message) });
    log.error('admin API request failed', { error });
    return reply.code(500).send({ error: 'Internal error' });
  });

  /** The scope a path names, by id or by key; a NotFoundError (404) when neither names one. */
  const scopeOf = (idOrKey: string) => directory.require(idOrKey);

  /** A scope's settings as the settings routes answer them: the digest schedule and the scope controls. */
  const settingsAnswer = (s: DigestSchedule, c: ScopeControlsView) => ({
    ...scopeControlsJson(c),
    scope: s.scopeKey,
    id: s.scopeId,
    digestTime: s.time,
    digestTimeIsDefault: s.timeIsDefault,
    digestEnabled: s.enabled,
    timezone: s.timeZone,
    timezoneIsDefault: s.timeZoneIsDefault,
    nextDigest: s.next?.toISOString() ?? null,
    digestDelivered: s.delivered,
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const checks: Record<string, string> = {};
    checks.database = (await storeStats.ping()) ? 'ok' : 'unreachable';
    checks.vectors = options.indexGuard.state().status;
    // Reported, not counted: the API itself works while Telegram is away. The container health
    // check reads the same fact from the heartbeat file and fails on it.
    const telegram = options.telegramPolling?.();
    if (telegram) checks.telegram = telegram.status;
    const ready = checks.database === 'ok';
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not ready',
      checks,
      ...(telegram && { telegram: { lastPollAt: telegram.lastPollAt, maxAgeSeconds: telegram.maxAgeSeconds } }),
    });
  });
  app.get('/metrics', async (_request, reply) => reply.type('text/plain; version=0.0.4').send(await renderMetrics(options)));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(renderDocsPage(app.swagger() as OpenApiDocument)),
  );

  registerWebPage(app);
  if (options.mcp) registerMcpRoute(app, { adminToken: options.token, directory, ...options.mcp });

  app.get('/scopes', async () => ({ scopes: await directory.list() }));
  if (options.links) registerLinkRoutes(app, options.links);
  if (options.web) registerWebRoutes(app, options.web);

  app.get('/scopes/:id/memories', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(memoriesQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = memoriesQuery.parse(request.query);
    const scope = await scopeOf(id);
    const { total, memories } = await catalog.list(scope.id, {
      state: q.state === 'active' ? 'current' : 'all',
      category: q.category,
      minConfidence: q.minConfidence,
      offset: q.offset,
      limit: q.limit,
    });
    return { total, offset: q.offset, limit: q.limit, memories };
  });

  app.get('/scopes/:id/memories/:mid', { schema: { params: jsonSchema(memoryParams) } }, async (request) => {
    const { id, mid } = memoryParams.parse(request.params);
    const scope = await scopeOf(id);
    const detail = await catalog.detail(scope.id, mid);
    if (!detail) throw new NotFoundError(`no memory ${mid} in scope ${id}`);
    return detail;
  });

  if (options.corrections) registerMemoryChangeRoute(app, { directory, corrections: options.corrections });

  app.delete('/scopes/:id/memories/:mid', { schema: { params: jsonSchema(memoryParams) } }, async (request) => {
    const { id, mid } = memoryParams.parse(request.params);
    const scope = await scopeOf(id);
    const result = await forget.forgetMemory(scope.id, mid, { reason: 'deleted through the admin API' });
    return { success: true, removed: result.removedIds.length };
  });

  app.delete('/scopes/:id/memories', { schema: { params: jsonSchema(scopeParams) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const scope = await scopeOf(id);
    return { success: true, deletedCount: await forget.purgeScope(scope.id, { reason: 'purged through the admin API' }) };
  });

  app.post('/scopes/:id/search', { schema: { params: jsonSchema(scopeParams), body: jsonSchema(searchBody) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const body = searchBody.parse(request.body);
    const scope = await scopeOf(id);
    const { results, notes } = await search.search({
      scopeId: scope.id,
      semanticQuery: body.query,
      strategy: body.strategy,
      limit: body.limit,
      kinds: body.kinds,
      includeInactive: body.includeInactive,
      minConfidence: body.minConfidence,
      minSourceTrust: body.minSourceTrust,
      topics: body.topics,
      entities: body.entities,
    });
    return { results, notes };
  });

  app.get('/scopes/:id/episodes', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(episodesQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = episodesQuery.parse(request.query);
    const scope = await scopeOf(id);
    return { episodes: await episodeLog.list(scope.id, { since: q.since ? new Date(q.since) : undefined, limit: q.limit }) };
  });

  app.get('/scopes/:id/audit', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(auditQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = auditQuery.parse(request.query);
    const scope = await scopeOf(id);
    return { events: await auditLog.latest(scope.id, q.limit) };
  });

  app.get('/scopes/:id/settings', { schema: { params: jsonSchema(scopeParams) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const scope = await scopeOf(id);
    return settingsAnswer(await options.digestSchedule.get(scope.id), await options.scopeControls.get(scope.id));
  });

  // Validated (the zone against the IANA database, the window and budgets by the scope
  // controls), audited (`settings` on the scope), read by the next turn and by the scheduler at
  // its next tick: no restart. Every field is checked before anything is written.
  app.patch('/scopes/:id/settings', { schema: { params: jsonSchema(scopeParams), body: jsonSchema(settingsBody) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const body = settingsBody.parse(request.body ?? {});
    const scope = await scopeOf(id);
    const controls: ScopeControlsChange = {
      ...(body.cappedMode !== undefined && { memoryCap: body.cappedMode ? (body.memoryCap ?? 'on') : null }),
      ...(body.cappedMode === undefined && body.memoryCap !== undefined && { memoryCap: body.memoryCap }),
      ...(body.sleepWindow !== undefined && { sleepWindow: body.sleepWindow === null ? null : parseSleepWindow(body.sleepWindow) }),
      ...(body.sleepDailyTokenBudget !== undefined && { sleepDailyTokenBudget: body.sleepDailyTokenBudget }),
      ...(body.replyDailyBudget !== undefined && { replyDailyBudget: body.replyDailyBudget }),
    };
    checkControlsChange(controls);
    const reason = { reason: 'changed through the admin API' };
    const schedule = await options.digestSchedule.set(scope.id, { time: body.digestTime, enabled: body.digestEnabled, timeZone: body.timezone }, reason);
    const changed = Object.keys(controls).length > 0 ? await options.scopeControls.set(scope.id, controls, reason) : await options.scopeControls.get(scope.id);
    return settingsAnswer(schedule, changed);
  });

  app.post('/scopes/:id/sleep', { schema: { params: jsonSchema(scopeParams), body: jsonSchema(sleepBody) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const body = sleepBody.parse(request.body ?? {});
    const scope = await scopeOf(id);
    if (body.dryRun) {
      const plan = await sleep.planNextBatch(scope.id, { now: new Date(), runId: uuidv7() });
      return { status: plan.status, plan: plan.plan ?? null, llmCalls: plan.responses.length };
    }
    if (!body.retryGivenUp) return { outcome: await scheduler.consolidateNow(scope.id) };
    if (!options.givenUp) throw new ValidationError('this server cannot retry messages consolidation gave up on', { code: 'sleep.retry_unavailable' });
    const retried = await options.givenUp.retry(scope.id, 'asked through the admin API (POST /scopes/:id/sleep retryGivenUp)');
    return { retried, outcome: await scheduler.consolidateNow(scope.id), givenUp: await options.givenUp.count(scope.id) };
  });

  app.get('/scopes/:id/export', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(exportQuery) } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const { format } = request.query as { format: 'json' | 'markdown' };
    const scope = await scopeOf(id);
    const doc = await archive.export(scope.id);
    if (format === 'markdown') {
      return reply.type('text/markdown; charset=utf-8').send(joinMarkdownFiles(renderMarkdownExport(doc, { defaultTimeZone: options.timeZone })));
    }
    return reply.type('application/json; charset=utf-8').send(serializeScopeExport(doc));
  });

  // The body is a JSON export. It fills the scope of the path when that scope is empty; a
  // scope that does not exist yet is created when the export is of that very scope (restoring
  // into an empty database). `mode=copy` gives every row a new id (the export's ids are taken),
  // into the empty scope of the path or, when none has that key or id, a new scope with that key.
  // The body is never held in memory: it is spooled to an encrypted temporary file as it arrives
  // (removed after the answer, or at once when the upload fails), then read on a worker thread one
  // element at a time and written a batch at a time with turns of the event loop between
  // (json-import.ts), so a big import neither stops the other requests nor grows with the
  // document (issue 16, item 5).
  await app.register(async (scoped) => {
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser(/^application\/json\s*(;.*)?$/i, (request, payload, done) => {
      if (Number(request.headers['content-length']) > IMPORT_BODY_LIMIT) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
      spoolToFile(payload, { limit: IMPORT_BODY_LIMIT, dir: options.spoolDir }).then(
        (file) => done(null, file),
        (error: Error) =>
          done(error instanceof SpoolTooLarge ? new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE() : Object.assign(error, { statusCode: 400 }), undefined),
      );
    });
    // Also when the handler never ran (a bad query string is refused after the body was read).
    scoped.addHook('onResponse', async (request) => {
      const body = request.body as ImportFile | undefined;
      if (body?.cipher) await removeImportFile(body);
    });
    scoped.post('/scopes/:id/import', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(importQuery) } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const { mode } = request.query as { mode: 'exact' | 'copy' };
      const file = request.body as ImportFile | undefined;
      if (!file) throw new ValidationError('The body is not JSON: it is empty', { code: 'import.invalid_json' });
      try {
        const existing = await directory.find(id);
        // A copy has new ids, so it cannot be asked for by the export's id: the path names the
        // new scope by its key (the CLI's `import-scope FILE --as NEW_KEY`), created by the import.
        const target = existing ? { scopeKey: existing.key } : mode === 'copy' ? { scopeKey: id } : { requireScopeId: id };
        const result = await archive.importFile(file, { mode, ...target });
        return await reply.code(existing ? 200 : 201).send(result);
      } finally {
        await removeImportFile(file);
      }
    });
  });

  return app;
}
