/**
 * The admin API's scopes and their memories: the list of scopes, one scope's memories a page at a
 * time, one memory with its sources, links and history, and forgetting one memory or the whole
 * scope (through the forget service: derived rows and exported files go too).
 */
import { NotFoundError } from '../shared/errors';
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { errorResponses, forgetMemoryResponse, memoriesResponse, memoryDetailResponse, purgeResponse, scopesResponse } from './response-schemas';
import { memoriesQuery, memoryParams, scopeParams } from './schemas';

/** The services the memory routes use. */
export type MemoryRouteDeps = Pick<ApiOptions, 'directory' | 'catalog' | 'forget'>;

export function registerMemoryRoutes(app: ApiApp, deps: MemoryRouteDeps): void {
  const { directory, catalog, forget } = deps;

  app.get('/scopes', { schema: { response: { 200: scopesResponse, ...errorResponses } } }, async () => ({ scopes: await directory.list() }));

  app.get(
    '/scopes/:id/memories',
    { schema: { params: scopeParams, querystring: memoriesQuery, response: { 200: memoriesResponse, ...errorResponses } } },
    async (request) => {
      const q = request.query;
      const scope = await directory.require(request.params.id);
      const { total, memories } = await catalog.list(scope.id, {
        state: q.state === 'active' ? 'current' : 'all',
        category: q.category,
        minConfidence: q.minConfidence,
        offset: q.offset,
        limit: q.limit,
      });
      return { total, offset: q.offset, limit: q.limit, memories };
    },
  );

  app.get('/scopes/:id/memories/:mid', { schema: { params: memoryParams, response: { 200: memoryDetailResponse, ...errorResponses } } }, async (request) => {
    const { id, mid } = request.params;
    const scope = await directory.require(id);
    const detail = await catalog.detail(scope.id, mid);
    if (!detail) throw new NotFoundError(`no memory ${mid} in scope ${id}`);
    return detail;
  });

  app.delete('/scopes/:id/memories/:mid', { schema: { params: memoryParams, response: { 200: forgetMemoryResponse, ...errorResponses } } }, async (request) => {
    const scope = await directory.require(request.params.id);
    const result = await forget.forgetMemory(scope.id, request.params.mid, { reason: 'deleted through the admin API' });
    return { success: true as const, removed: result.removedIds.length };
  });

  app.delete('/scopes/:id/memories', { schema: { params: scopeParams, response: { 200: purgeResponse, ...errorResponses } } }, async (request) => {
    const scope = await directory.require(request.params.id);
    return { success: true as const, deletedCount: await forget.purgeScope(scope.id, { reason: 'purged through the admin API' }) };
  });
}
