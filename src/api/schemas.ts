/**
 * Request schemas of the admin API, written once in zod and handed to fastify as JSON Schema
 * (validation and the OpenAPI document come from the same source).
 */
import { z } from 'zod';

export const scopeParams = z.object({ id: z.string().min(1).max(100) });
export const memoryParams = z.object({ id: z.string().min(1).max(100), mid: z.string().min(1).max(100) });

export const memoriesQuery = z.object({
  /** active (default), all (faded and superseded too) */
  state: z.enum(['active', 'all']).default('active'),
  category: z.string().min(1).max(40).optional(),
  minConfidence: z.coerce.number().min(0).max(1).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export const episodesQuery = z.object({
  since: z.iso.datetime({ offset: true }).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const auditQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) });

export const searchBody = z.object({
  query: z.string().min(1).max(2_000).optional(),
  strategy: z.enum(['hybrid', 'semantic', 'keyword', 'temporal']).default('hybrid'),
  limit: z.number().int().min(1).max(200).default(10),
  kinds: z.array(z.enum(['episode', 'memory'])).min(1).optional(),
  includeInactive: z.boolean().optional(),
  minConfidence: z.number().min(0).max(1).optional(),
  minSourceTrust: z.number().min(0).max(1).optional(),
});

export const exportQuery = z.object({ format: z.enum(['json', 'markdown']).default('json') });
export const importQuery = z.object({ mode: z.enum(['exact', 'copy']).default('exact') });
export const sleepBody = z.object({ dryRun: z.boolean().default(false) });
/** PATCH /scopes/:id/settings: any of the three; absent fields stay as they are. */
export const settingsBody = z
  .object({
    digestTime: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM, 24-hour, e.g. 21:30').optional(),
    digestEnabled: z.boolean().optional(),
    timezone: z.string().min(1).max(64).optional(),
  })
  .strict();

/** JSON Schema for fastify (draft 2020-12 features avoided: ajv's default draft-07). */
export function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
  return rest;
}
