/**
 * What happened in a scope, read back: its episodes (the messages, newest first, from a date)
 * and its audit trail (every change to its memory and settings, with who asked and why).
 */
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { auditResponse, episodesResponse, errorResponses } from './response-schemas';
import { auditQuery, episodesQuery, scopeParams } from './schemas';

/** The services the history routes read. */
export type HistoryRouteDeps = Pick<ApiOptions, 'directory' | 'episodeLog' | 'auditLog'>;

export function registerHistoryRoutes(app: ApiApp, deps: HistoryRouteDeps): void {
  app.get(
    '/scopes/:id/episodes',
    { schema: { params: scopeParams, querystring: episodesQuery, response: { 200: episodesResponse, ...errorResponses } } },
    async (request) => {
      const q = request.query;
      const scope = await deps.directory.require(request.params.id);
      return { episodes: await deps.episodeLog.list(scope.id, { since: q.since ? new Date(q.since) : undefined, limit: q.limit }) };
    },
  );

  app.get(
    '/scopes/:id/audit',
    { schema: { params: scopeParams, querystring: auditQuery, response: { 200: auditResponse, ...errorResponses } } },
    async (request) => {
      const scope = await deps.directory.require(request.params.id);
      return { events: await deps.auditLog.latest(scope.id, request.query.limit) };
    },
  );
}
