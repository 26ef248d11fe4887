/** The REST validator: loose header schemas check the headers they name and copy nothing. */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { idempotencyHeadersSchema } from '../../src/routes/schemas.ts';
import { requestValidatorCompiler } from '../../src/routes/validator.ts';

const compile = (schema: z.ZodType, httpPart: string) =>
  requestValidatorCompiler({ schema, httpPart, method: 'POST', url: '/x' });

describe('requestValidatorCompiler', () => {
  const check = compile(idempotencyHeadersSchema, 'headers');

  it('passes valid or absent named headers without replacing the headers object', () => {
    expect(check({ host: 'a', 'idempotency-key': 'k-1' })).toBe(true);
    expect(check({ host: 'a', authorization: 'Bearer x' })).toBe(true);
  });

  it('refuses a bad named header with the issue the whole schema gives', () => {
    const headers = { host: 'a', 'idempotency-key': 'k'.repeat(256) };
    const whole = idempotencyHeadersSchema.safeParse(headers);
    const result = check(headers) as { error: Array<{ instancePath: string; message: string }> };
    expect(result.error).toEqual([
      expect.objectContaining({ instancePath: '/idempotency-key', message: whole.error?.issues[0]?.message }),
    ]);
    expect(check({ 'idempotency-key': '' })).toHaveProperty('error');
  });

  it('leaves other parts, and header schemas that are not loose, to zod as a whole', () => {
    const body = compile(z.object({ a: z.string() }), 'body');
    expect(body({ a: 'x', b: 1 })).toEqual({ value: { a: 'x' } });
    const strict = compile(z.object({ a: z.string() }), 'headers');
    expect(strict({ a: 'x', b: 'y' })).toEqual({ value: { a: 'x' } });
  });
});
