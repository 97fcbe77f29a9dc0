/**
 * `POST /scopes/:id/search`: the hybrid search of one scope (the same search the agent's recall
 * uses), with its filters; `notes` say which part of the search was left out and why.
 */
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { errorResponses, searchResponse } from './response-schemas';
import { scopeParams, searchBody } from './schemas';

/** The services the search route uses. */
export type SearchRouteDeps = Pick<ApiOptions, 'directory' | 'search'>;

export function registerSearchRoutes(app: ApiApp, deps: SearchRouteDeps): void {
  app.post(
    '/scopes/:id/search',
    { schema: { params: scopeParams, body: searchBody, response: { 200: searchResponse, ...errorResponses } } },
    async (request) => {
      const body = request.body;
      const scope = await deps.directory.require(request.params.id);
      const { results, notes } = await deps.search.search({
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
    },
  );
}
