/**
 * `PATCH /scopes/:id/memories/:mid` `{ content?, pinned? }`: the operator corrects a memory (a new
 * version through the memory writer, the old one kept as history) and/or pins or unpins it: the
 * same domain verbs as the person's `/fix N` and `/pin N` (memory-corrections.ts), audited as the
 * operator's through the admin API. With both, the new version is pinned (or unpinned). The answer
 * is `{ memory }`, the memory after the change (texts through the output filter); another scope's
 * memory id is 404, a bad body 400 naming the field.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { CorrectionOrigin, MemoryCorrections } from '../memory/memories/memory-corrections';
import { MAX_MEMORY_CHARS } from '../memory/memories/memory-guards';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import { jsonSchema, memoryParams } from './schemas';

/** What a change may say; at least one field. */
export const memoryChangeBody = z
  .object({
    /** The memory's new wording: a new version, the old kept as history. */
    content: z.string().max(MAX_MEMORY_CHARS).optional(),
    /** true: decay and capped mode leave it; false: it fades like any other. */
    pinned: z.boolean().optional(),
  })
  .strict()
  .refine((body) => body.content !== undefined || body.pinned !== undefined, { message: 'give content, pinned or both', path: ['content'] });

const ORIGIN: CorrectionOrigin = { by: 'operator', door: 'the admin API' };

export function registerMemoryChangeRoute(
  app: FastifyInstance,
  deps: { directory: Pick<ScopeDirectory, 'require'>; corrections: Pick<MemoryCorrections, 'correct' | 'pin'> },
): void {
  app.patch('/scopes/:id/memories/:mid', { schema: { params: jsonSchema(memoryParams), body: jsonSchema(memoryChangeBody) } }, async (request) => {
    const { id, mid } = memoryParams.parse(request.params);
    const body = memoryChangeBody.parse(request.body ?? {});
    const scope = await deps.directory.require(id);
    const now = new Date();
    let memory = body.content === undefined ? undefined : await deps.corrections.correct(scope.id, mid, body.content, { ...ORIGIN, now });
    if (body.pinned !== undefined) memory = await deps.corrections.pin(scope.id, memory?.id ?? mid, body.pinned, { ...ORIGIN, now });
    return { memory };
  });
}
