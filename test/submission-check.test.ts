/**
 * The script intake's cheap submission check (bridge/contract/submission-check.ts) accepts only
 * what scriptSubmissionSchema accepts unchanged: for every case, a check that says yes must agree
 * with zod's parse, value for value; the usual submissions must take the cheap path at all.
 */
import { describe, expect, it } from 'vitest';
import { isPlainSubmission } from '../bridge/contract/submission-check.ts';
import { decodePayload, scriptSubmissionSchema } from '../bridge/contract/topics.ts';

const full = {
  script: 'SLEEP 50\nPRINT receipt line',
  requestId: 'job-1:reg-1',
  replyTo: 'store/replies/ctl-1/job-1:reg-1',
  notAfter: 1_790_000_000_000,
};

/** Values that break one field or another: wrong types, lengths, topics, numbers. */
const BAD = [
  undefined,
  null,
  0,
  -1,
  -0,
  1.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  '',
  ' ',
  'x'.repeat(200),
  'x'.repeat(201),
  'x'.repeat(1024),
  'x'.repeat(1025),
  'a/+/b',
  'a/#',
  '#',
  '$SYS/x',
  'a$b',
  `a${String.fromCharCode(0)}b`,
  'ünïcödé/topic',
  true,
  [],
  {},
  ['x'],
];

/** Every field replaced by every bad value, removed, and one unknown key added. */
function variants(base: Record<string, unknown>): unknown[] {
  const out: unknown[] = [base, null, [], 'text', 42, { ...base, extra: 1 }];
  // JSON.parse makes `__proto__` an own key (an object literal would set the prototype).
  out.push(JSON.parse(`{"script":"x","__proto__":{"script":"y"}}`));
  for (const key of Object.keys(base)) {
    const { [key]: _removed, ...without } = base;
    out.push(without);
    for (const bad of BAD) out.push({ ...base, [key]: bad });
  }
  return out;
}

describe('script submission check', () => {
  it('takes the cheap path for the usual submissions', () => {
    expect(isPlainSubmission(full)).toBe(true);
    expect(isPlainSubmission({ script: 'PRINT x' })).toBe(true);
    expect(isPlainSubmission({ script: 'PRINT x', replyTo: 'replies/me' })).toBe(true);
  });

  it('accepts nothing the schema refuses or changes', () => {
    const cases = [...variants(full), ...variants({ script: 'PRINT x' })];
    for (const value of cases) {
      if (!isPlainSubmission(value)) continue; // zod decides, as before
      const parsed = scriptSubmissionSchema.safeParse(value);
      expect(parsed.success, JSON.stringify(value)).toBe(true);
      expect(parsed.data).toEqual(value);
    }
    expect(cases.filter((value) => isPlainSubmission(value)).length).toBeGreaterThan(10);
  });

  it('leaves the refusals to zod, worded as before', () => {
    for (const value of variants(full)) {
      const text = JSON.stringify(value) ?? 'null';
      expect(decodePayload(scriptSubmissionSchema, text, isPlainSubmission)).toEqual(
        decodePayload(scriptSubmissionSchema, text),
      );
    }
  });
});
