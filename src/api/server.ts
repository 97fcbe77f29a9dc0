/**
 * The admin HTTP API (fastify: schema validation on every route from JSON Schema, which
 * @fastify/swagger turns into the OpenAPI document; hooks for auth; light and fast). Bound to
 * 127.0.0.1 by default; every route but /healthz and /readyz needs `Authorization: Bearer
 * <ADMIN_TOKEN>`. A scope's id in the path scopes every query: another scope's memory id in it
 * answers 404, never data.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { Core } from '../core';
import { AppError, NotFoundError } from '../shared/errors';
import { uuidv7 } from '../shared/ids';
import type { Logger } from '../shared/logger';
import { bearerMatches } from './auth';
import { renderMetrics } from './metrics-endpoint';
import { exportScope } from '../export/json-export';
import { importScope } from '../export/json-import';
import { joinMarkdownFiles, renderMarkdownExport } from '../export/markdown-export';
import { serializeScopeExport } from '../export/scope-document';
import { auditQuery, episodesQuery, exportQuery, importQuery, jsonSchema, memoriesQuery, memoryParams, scopeParams, searchBody, sleepBody } from './schemas';

/** Largest JSON export POST /scopes/:id/import takes (a scope of ~100,000 episodes). */
const IMPORT_BODY_LIMIT = 256 * 1024 * 1024;

export interface ApiOptions {
  readonly core: Core;
  readonly token: string;
  readonly logger: Logger;
}

const OPEN_ROUTES = new Set(['/healthz', '/readyz']);

export async function createApiServer(options: ApiOptions): Promise<FastifyInstance> {
  const { core } = options;
  const prisma = core.db.prisma;
  const log = options.logger.child({ component: 'api' });
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024, ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false, useDefaults: true } } });
  await app.register(swagger, { openapi: { info: { title: 'Nocturne admin API', version: '1' }, components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } }, security: [{ bearer: [] }] } });

  app.addHook('onRequest', async (request, reply) => {
    if (OPEN_ROUTES.has(request.routeOptions.url ?? '')) return;
    if (!bearerMatches(request.headers.authorization, options.token)) {
      await reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'missing or wrong bearer token' });
    }
  });

  app.setErrorHandler(async (caught, _request, reply) => {
    const error = caught instanceof Error ? caught : new Error(String(caught));
    const status = (error as { statusCode?: number }).statusCode;
    if ((error as { validation?: unknown }).validation) return reply.code(400).send({ error: 'invalid request', detail: error.message });
    if (error instanceof NotFoundError) return reply.code(404).send({ error: error.message });
    if (error instanceof AppError && error.code === 'import.conflict') return reply.code(409).send({ error: error.message, code: error.code });
    if (error instanceof AppError && error.category === 'user') return reply.code(400).send({ error: error.message, code: error.code });
    if (status && status >= 400 && status < 500) return reply.code(status).send({ error: error.message });
    log.error('admin API request failed', { error });
    return reply.code(500).send({ error: 'internal error' });
  });

  async function scopeOf(id: string) {
    const scope = await prisma.scope.findUnique({ where: { id } });
    if (!scope) throw new NotFoundError(`no scope ${id}`);
    return scope;
  }

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const checks: Record<string, string> = {};
    try {
      await prisma.$queryRawUnsafe('SELECT 1');
      checks.database = 'ok';
    } catch {
      checks.database = 'unreachable';
    }
    checks.vectors = core.indexGuard.state().status;
    const ready = checks.database === 'ok';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
  app.get('/metrics', async (_request, reply) => reply.type('text/plain; version=0.0.4').send(await renderMetrics(core)));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.get('/scopes', async () => ({ scopes: await core.scopes.list() }));

  app.get('/scopes/:id/memories', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(memoriesQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = memoriesQuery.parse(request.query);
    await scopeOf(id);
    const where = { scopeId: id, category: q.category, confidence: q.minConfidence === undefined ? undefined : { gte: q.minConfidence }, ...(q.state === 'active' ? { active: true, validTo: null } : {}) };
    const [total, memories] = await Promise.all([
      prisma.memory.count({ where }),
      prisma.memory.findMany({ where, orderBy: [{ confidence: 'desc' }, { id: 'asc' }], skip: q.offset, take: q.limit }),
    ]);
    return { total, offset: q.offset, limit: q.limit, memories };
  });

  app.get('/scopes/:id/memories/:mid', { schema: { params: jsonSchema(memoryParams) } }, async (request) => {
    const { id, mid } = memoryParams.parse(request.params);
    const memory = await prisma.memory.findFirst({
      where: { scopeId: id, id: mid },
      include: { sources: { include: { episode: { select: { id: true, externalId: true, content: true, timestamp: true, role: true } } } }, linksFrom: true, linksTo: true },
    });
    if (!memory) throw new NotFoundError(`no memory ${mid} in scope ${id}`);
    const history = await prisma.auditEvent.findMany({ where: { scopeId: id, subjectType: 'memory', subjectId: mid }, orderBy: { createdAt: 'asc' } });
    return { memory, history };
  });

  app.delete('/scopes/:id/memories/:mid', { schema: { params: jsonSchema(memoryParams) } }, async (request) => {
    const { id, mid } = memoryParams.parse(request.params);
    await scopeOf(id);
    const result = await core.forget.forgetMemory(id, mid, { reason: 'deleted through the admin API' });
    return { success: true, removed: result.removedIds.length };
  });

  app.delete('/scopes/:id/memories', { schema: { params: jsonSchema(scopeParams) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    await scopeOf(id);
    return { success: true, deletedCount: await core.forget.purgeScope(id, { reason: 'purged through the admin API' }) };
  });

  app.post('/scopes/:id/search', { schema: { params: jsonSchema(scopeParams), body: jsonSchema(searchBody) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const body = searchBody.parse(request.body);
    await scopeOf(id);
    const { results, notes } = await core.search.search({ scopeId: id, semanticQuery: body.query, strategy: body.strategy, limit: body.limit, kinds: body.kinds, includeInactive: body.includeInactive, minConfidence: body.minConfidence, minSourceTrust: body.minSourceTrust });
    return { results, notes };
  });

  app.get('/scopes/:id/episodes', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(episodesQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = episodesQuery.parse(request.query);
    await scopeOf(id);
    return { episodes: await core.episodes.list(id, { since: q.since ? new Date(q.since) : undefined, limit: q.limit }) };
  });

  app.get('/scopes/:id/audit', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(auditQuery) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const q = auditQuery.parse(request.query);
    await scopeOf(id);
    return { events: await prisma.auditEvent.findMany({ where: { scopeId: id }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: q.limit }) };
  });

  app.post('/scopes/:id/sleep', { schema: { params: jsonSchema(scopeParams), body: jsonSchema(sleepBody) } }, async (request) => {
    const { id } = scopeParams.parse(request.params);
    const body = sleepBody.parse(request.body ?? {});
    await scopeOf(id);
    if (body.dryRun) {
      const plan = await core.sleep.planNextBatch(id, { now: new Date(), runId: uuidv7() });
      return { status: plan.status, plan: plan.plan ?? null, llmCalls: plan.responses.length };
    }
    return { outcome: await core.scheduler.consolidateNow(id) };
  });

  app.get('/scopes/:id/export', { schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(exportQuery) } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const { format } = request.query as { format: 'json' | 'markdown' };
    const scope = await scopeOf(id);
    const doc = await exportScope(prisma, scope.id);
    if (format === 'markdown') {
      return reply.type('text/markdown; charset=utf-8').send(joinMarkdownFiles(renderMarkdownExport(doc, { defaultTimeZone: core.config.timeZone })));
    }
    return reply.type('application/json; charset=utf-8').send(serializeScopeExport(doc));
  });

  // The body is a JSON export. It fills the scope of the path when that scope is empty; a
  // scope that does not exist yet is created when the export is of that very scope (restoring
  // into an empty database). `mode=copy` gives every row a new id (the export's ids are taken).
  app.post('/scopes/:id/import', { bodyLimit: IMPORT_BODY_LIMIT, schema: { params: jsonSchema(scopeParams), querystring: jsonSchema(importQuery) } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const { mode } = request.query as { mode: 'exact' | 'copy' };
    const existing = await prisma.scope.findUnique({ where: { id } });
    const body = request.body as { scope?: { id?: unknown } } | undefined;
    if (!existing && body?.scope?.id !== id) throw new NotFoundError(`no scope ${id} (an export creates a scope only under its own id)`);
    const result = await importScope(prisma, request.body, { mode, ...(existing ? { scopeKey: existing.key } : {}) });
    return reply.code(existing ? 200 : 201).send(result);
  });

  return app;
}
