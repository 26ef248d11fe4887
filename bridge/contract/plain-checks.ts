/**
 * The pieces of the cheap acceptance checks in front of zod (bridge/contract/submission-check.ts
 * for scripts, controller/message-checks.ts for what a controller receives): a message a check
 * accepts is taken as JSON.parse made it, anything else goes through the schema.
 */

export type Json = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every key of `value` is one of `allowed` (nothing a zod object would strip). */
export function onlyKeys(value: Json, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

/** A schema's own keys: a field added to it is a key the checks refuse (zod then decides). */
export const keysOf = (schema: { shape: object }): ReadonlySet<string> => new Set(Object.keys(schema.shape));
