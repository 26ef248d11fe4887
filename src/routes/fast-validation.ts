/**
 * A cheap acceptance check in front of a zod schema, for the hottest routes (the submissions):
 * when the check says a value is valid, the route takes it as it is; otherwise zod validates it
 * as before, so a refusal says exactly what it always said (docs/benchmarks.md, "Issue 14").
 *
 * Why: zod's parse copies what it validates. For the `Idempotency-Key` header schema (a loose
 * object, so unknown headers pass) that is a copy of every header of every request, which fastify
 * then stores as "additional headers" and merges again (`Object.assign`) on each later read of
 * `request.headers`. For a body it is a new object per request. The check must accept only what
 * the schema accepts, and the route must read nothing the schema would have stripped or changed.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';

type Accepts = (data: unknown) => boolean;

const fastPaths = new WeakMap<object, Accepts>();

/** Registers `accepts` for `schema`; it returns true only for values the schema accepts unchanged. */
export function withFastPath<T extends z.ZodType>(schema: T, accepts: Accepts): T {
  fastPaths.set(schema, accepts);
  return schema;
}

/**
 * fastify-type-provider-zod's validator compiler, with the fast path when the schema has one.
 * A validator answering `true` (not `{ value }`) leaves the request part as it was parsed.
 */
export const fastValidatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  const full = validatorCompiler(route);
  const accepts = fastPaths.get(route.schema);
  if (accepts === undefined) return full;
  return (data: unknown) => (accepts(data) ? true : full(data));
};

/** A JSON object (what a parsed body is) whose `field` is a string. */
export function objectWithString(field: string): Accepts {
  return (data) =>
    typeof data === 'object' &&
    data !== null &&
    !Array.isArray(data) &&
    typeof (data as Record<string, unknown>)[field] === 'string';
}
