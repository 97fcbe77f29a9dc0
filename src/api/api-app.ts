/**
 * The fastify instance the admin API's route groups register on, typed by the zod type provider:
 * a handler reads its request parts as its route's zod schemas parsed them (schemas.ts).
 */
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';

/** The admin API's fastify instance, with request parts typed by their zod schemas. */
export type ApiApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;
