/**
 * The admin HTTP API (fastify: every request part validated by its route's zod schema, every
 * answer described by a response schema, both published by @fastify/swagger as the OpenAPI
 * document; hooks for auth; light and fast). Bound to 127.0.0.1 by default; every route but
 * /healthz and /readyz needs `Authorization: Bearer <ADMIN_TOKEN>`. A scope in the path (its id,
 * or its key such as `telegram:private:42`) scopes every query: another scope's memory id in it
 * answers 404, never data.
 *
 * This file builds the server (compilers, OpenAPI, auth, the error answers) and registers the
 * route groups, one file each; every group is given the domain services it uses by name, and
 * every stored text it returns comes from them, through the output filter.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, NotFoundError } from '../shared/errors';
import { asSentence } from '../shared/sentence';
import type { ApiOptions } from './api-options';
import { registerArchiveRoutes } from './archive-routes';
import { bearerMatches } from './auth';
import { registerHealthRoutes } from './health-routes';
import { registerHistoryRoutes } from './history-routes';
import { registerLinkRoutes } from './link-routes';
import { registerWebRoutes } from './web-routes';
import { registerWebPage } from './web-page';
import { registerMemoryChangeRoute } from './memory-change-route';
import { MCP_PATH, registerMcpRoute } from './mcp-route';
import { registerMemoryRoutes } from './memory-routes';
import { responseSerializerCompiler } from './response-serializer';
import { RequestValidationError, validatorFor } from './schemas';
import { registerSearchRoutes } from './search-routes';
import { registerSettingsRoutes } from './settings-routes';
import { registerSleepRoutes } from './sleep-routes';

export type { ApiOptions } from './api-options';

/**
 * Routes answered without the token: the probes, and the reference page, which a browser opens
 * by its address (it cannot send a bearer header) and which holds no data, only the API's shape.
 */
const OPEN_ROUTES = new Set(['/healthz', '/readyz', '/docs']);

/** Builds the admin API: the server, then each route group; `listen` is the caller's. */
/** Paths of the memory page (`/app`, its assets, `/app/login`, `/app/api/*`): not behind ADMIN_TOKEN. */
function isWebPagePath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === '/app' || path.startsWith('/app/');
}

export async function createApiServer(options: ApiOptions): Promise<FastifyInstance> {
  const log = options.logger.child({ component: 'api' });
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 }).withTypeProvider<ZodTypeProvider>();
  // Every request part is validated by its route's zod schema (schemas.ts): ajv's coercion let
  // `limit=Infinity` through to a 500; zod refuses it, naming the range.
  app.setValidatorCompiler(({ schema, httpPart }) => validatorFor(schema, httpPart ?? 'request'));
  app.setSerializerCompiler(responseSerializerCompiler(log));
  await app.register(swagger, {
    openapi: {
      info: { title: 'Nocturne admin API', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // Schemas used more than once are written once, under components.schemas, and referenced.
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
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

  registerHealthRoutes(app, options);
  if (options.mcp) registerMcpRoute(app, { adminToken: options.token, directory: options.directory, ...options.mcp });
  registerMemoryRoutes(app, options);
  if (options.links) registerLinkRoutes(app, options.links);
  registerWebPage(app);
  if (options.web) registerWebRoutes(app, options.web);
  if (options.corrections) registerMemoryChangeRoute(app, { directory: options.directory, corrections: options.corrections });
  registerSearchRoutes(app, options);
  registerHistoryRoutes(app, options);
  registerSettingsRoutes(app, options);
  registerSleepRoutes(app, options);
  await registerArchiveRoutes(app, options);

  return app;
}
