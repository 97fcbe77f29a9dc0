/**
 * The operator's probes and references on the admin API: `/healthz` (the process answers),
 * `/readyz` (the database answers; the vector index and Telegram polling reported), `/metrics`
 * (Prometheus text), and the API's own description, `/openapi.json` and the `/docs` page (both
 * hidden from the document they render).
 */
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { renderDocsPage, type OpenApiDocument } from './docs-page';
import { renderMetrics } from './metrics-endpoint';
import { errorResponses, healthResponse, metricsResponse, readyResponse } from './response-schemas';

/** The services the probes read. */
export type HealthRouteDeps = Pick<ApiOptions, 'storeStats' | 'indexGuard' | 'telegramPolling' | 'metrics' | 'embeddingWorker'>;

export function registerHealthRoutes(app: ApiApp, deps: HealthRouteDeps): void {
  app.get('/healthz', { schema: { response: { 200: healthResponse } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { schema: { response: { 200: readyResponse, 503: readyResponse } } }, async (_request, reply) => {
    const checks: Record<string, string> = {};
    checks.database = (await deps.storeStats.ping()) ? 'ok' : 'unreachable';
    checks.vectors = deps.indexGuard.state().status;
    // Reported, not counted: the API itself works while Telegram is away. The container health
    // check reads the same fact from the heartbeat file and fails on it.
    const telegram = deps.telegramPolling?.();
    if (telegram) checks.telegram = telegram.status;
    const ready = checks.database === 'ok';
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not ready',
      checks,
      ...(telegram && { telegram: { lastPollAt: telegram.lastPollAt, maxAgeSeconds: telegram.maxAgeSeconds } }),
    });
  });
  app.get('/metrics', { schema: { response: { 200: metricsResponse, ...errorResponses } } }, async (_request, reply) =>
    reply.type('text/plain; version=0.0.4').send(await renderMetrics(deps)),
  );
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(renderDocsPage(app.swagger() as OpenApiDocument)),
  );
}
