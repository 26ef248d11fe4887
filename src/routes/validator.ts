/**
 * The REST API's request validator: fastify-type-provider-zod's, except for headers. A loose
 * header schema (the Idempotency-Key of the submit routes) is checked on the headers it names
 * only, and `request.headers` stays node's own object: zod would otherwise copy every header
 * of every request into a new one. Header schemas check, they never transform.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import * as z from 'zod';

type Headers = Record<string, string | string[] | undefined>;

/** True for `z.looseObject(...)`: headers it does not name pass through as they are. */
function isLooseObject(schema: unknown): schema is z.ZodObject {
  return schema instanceof z.ZodObject && schema.def.catchall?._zod.def.type === 'unknown';
}

export const requestValidatorCompiler: FastifySchemaCompiler<z.ZodType> = (routeSchema) => {
  const { schema, httpPart } = routeSchema;
  if (httpPart !== 'headers' || !isLooseObject(schema)) return validatorCompiler(routeSchema);
  const shape = schema.shape;
  const names = Object.keys(shape);
  // Same shape, same issues and messages as the whole schema gives for these headers.
  const named = validatorCompiler({ ...routeSchema, schema: z.object(shape) });
  // A request without any of them, all optional, has nothing to check.
  const allOptional = names.every((name) => shape[name]!.safeParse(undefined).success);
  return (data: Headers) => {
    const picked: Headers = {};
    let present = false;
    for (const name of names) {
      const value = data[name];
      if (value !== undefined) present = true;
      picked[name] = value;
    }
    if (!present && allOptional) return true;
    const result = named(picked);
    // `true`: valid, and fastify keeps request.headers as it is.
    return typeof result === 'object' && 'error' in result && result.error ? result : true;
  };
};
