/**
 * How the admin API writes a JSON answer that has a response schema (response-schemas.ts): the
 * JSON text of what the handler returned, checked against the route's published schema.
 *
 * Not the type provider's `serializerCompiler`: that one encodes the value through the schema, so
 * a record's Date (which JSON writes as a string) fails it, and a field the schema does not name
 * would be dropped. Here the schema describes the JSON the client reads, and it never changes an
 * answer: a mismatch is logged as a defect of the published schema (route, status and where in
 * the answer; never the values, which are a person's data) and the answer is sent as it is.
 */
import type { FastifySerializerCompiler } from 'fastify';
import { z } from 'zod';
import type { Logger } from '../shared/logger';

/** The serializer compiler for every response schema of the admin API. */
export function responseSerializerCompiler(log: Logger): FastifySerializerCompiler<unknown> {
  return ({ schema, method, url, httpStatus }) => {
    if (!(schema instanceof z.ZodType)) throw new Error(`the admin API's response schemas are zod schemas: ${method} ${url} ${httpStatus} is not`);
    const published = schema;
    return (data) => {
      const text = JSON.stringify(data);
      const checked = published.safeParse(text === undefined ? undefined : JSON.parse(text));
      if (!checked.success) {
        const problems = checked.error.issues.map((issue) => `${issue.path.join('.') || '(the answer)'}: ${issue.code}`);
        log.error('admin API answer does not match its published schema', { route: `${method} ${url}`, status: httpStatus, problems });
      }
      return text;
    };
  };
}
