/**
 * Register attributes (docs/mqtt.md, "State"): `serve --attribute KEY=VALUE` puts them in the
 * device's retained state, where a head-office controller filters on them (`"attributes":
 * {"region": "north"}` in a job's target). Bounded on both ends, since a register may lie: at
 * most 32, keys `[a-z][a-z0-9_-]{0,31}`, values at most 128 characters.
 */
import * as z from 'zod';

export const MAX_ATTRIBUTES = 32;
export const MAX_ATTRIBUTE_VALUE = 128;
export const ATTRIBUTE_KEY_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

export const attributeKeySchema = z
  .string()
  .regex(ATTRIBUTE_KEY_PATTERN, 'attribute keys must match [a-z][a-z0-9_-]{0,31}');

export const attributeValueSchema = z
  .string()
  .max(MAX_ATTRIBUTE_VALUE, `attribute values are at most ${MAX_ATTRIBUTE_VALUE} characters`);

/** `{"region": "north", ...}`: at most MAX_ATTRIBUTES entries. */
export const attributesSchema = z
  .record(attributeKeySchema, attributeValueSchema)
  .refine((attributes) => Object.keys(attributes).length <= MAX_ATTRIBUTES, {
    message: `at most ${MAX_ATTRIBUTES} attributes`,
  });

export type Attributes = z.infer<typeof attributesSchema>;

/**
 * One `--attribute KEY=VALUE` into `[key, value]`; the value is everything after the first `=`
 * (it may hold `=` itself), and may be empty.
 */
export const attributeFlagSchema = z.string().transform((text, ctx): [string, string] => {
  const at = text.indexOf('=');
  if (at < 0) {
    ctx.addIssue({ code: 'custom', message: `expected KEY=VALUE, got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  if (!ATTRIBUTE_KEY_PATTERN.test(key)) {
    ctx.addIssue({
      code: 'custom',
      message: `attribute key ${JSON.stringify(key)} must match [a-z][a-z0-9_-]{0,31}`,
    });
    return z.NEVER;
  }
  if (value.length > MAX_ATTRIBUTE_VALUE) {
    ctx.addIssue({
      code: 'custom',
      message: `attribute ${key}: the value has ${value.length} characters, at most ${MAX_ATTRIBUTE_VALUE}`,
    });
    return z.NEVER;
  }
  return [key, value];
});

/** What is wrong with a list of `--attribute` pairs as a whole (count, repeated keys). */
export function attributeListProblems(pairs: readonly (readonly [string, string])[]): string[] {
  const problems: string[] = [];
  if (pairs.length > MAX_ATTRIBUTES)
    problems.push(`--attribute: ${pairs.length} attributes given, at most ${MAX_ATTRIBUTES}`);
  const seen = new Set<string>();
  for (const [key] of pairs) {
    if (seen.has(key)) problems.push(`--attribute: attribute ${key} given twice`);
    seen.add(key);
  }
  return problems;
}
