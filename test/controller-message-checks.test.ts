/**
 * The controller's cheap message checks (controller/message-checks.ts) accept only what the zod
 * schemas accept unchanged: for every case, a check that says yes must agree with zod's parse,
 * value for value; the usual messages must take the cheap path at all.
 */
import { describe, expect, it } from 'vitest';
import { replySchema, stateSchema, statusMessageSchema } from '../bridge/contract/topics.ts';
import { isoPatternOf, messageChecks } from '../controller/message-checks.ts';
import { decodeControllerMessage } from '../controller/messages.ts';

const iso = isoPatternOf(statusMessageSchema.shape.queuedAt);
const checks = messageChecks(iso);

const status = {
  id: 7,
  deviceId: 'reg-1',
  bootId: 'b1',
  seq: 3,
  status: 'FINISHED',
  report: 'ok',
  requestId: 'job-1:reg-1',
  queuedAt: '2026-11-26T10:00:00.000Z',
  startedAt: '2026-11-26T10:00:00.010Z',
  finishedAt: '2026-11-26T10:00:00.060Z',
};
const accepted = { requestId: 'r1', deviceId: 'reg-1', id: 7, status: 'RUNNING' };
const refused = { requestId: 'r1', deviceId: 'reg-1', error: 'QUEUE_FULL: the queue is full' };
const online = {
  online: true,
  deviceId: 'reg-1',
  bootId: 'b1',
  installation: 'cash-register',
  version: '1.2.0',
  startedAt: '2026-11-26T09:00:00Z',
  groups: ['all', 'tills'],
};
const offline = { online: false, deviceId: 'reg-1', bootId: 'b1' };

/** Values that break one field or another: wrong types, ranges, shapes, dates. */
const BAD = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 53,
  '',
  'x/y',
  '+',
  'a'.repeat(65),
  true,
  false,
  [],
  {},
  ['ok'],
  ['bad/id'],
  'RUNNING ',
  'finished',
  'QUEUED',
  'pos ',
  '2026-11-26',
  '2026-11-26T10:00:00+01:00',
  '2026-02-30T10:00:00Z',
  '2026-11-26T24:00:00Z',
  '2024-02-29T10:00:00.5Z',
];

/** Every field replaced by every bad value, removed, and one unknown key added. */
function variants(base: Record<string, unknown>): unknown[] {
  const out: unknown[] = [base, null, [], 'text', 42, { ...base, extra: 1 }];
  for (const key of Object.keys(base)) {
    const { [key]: _removed, ...without } = base;
    out.push(without);
    for (const bad of BAD) out.push({ ...base, [key]: bad });
  }
  return out;
}

function agrees(check: (value: unknown) => boolean, schema: { safeParse(v: unknown): unknown }) {
  return (value: unknown): void => {
    if (!check(value)) return; // zod decides, as before
    const parsed = schema.safeParse(value) as { success: boolean; data?: unknown };
    expect(parsed.success, JSON.stringify(value)).toBe(true);
    expect(parsed.data).toEqual(value);
  };
}

describe('controller message checks', () => {
  it('finds zod datetime expression, so the checks are in use', () => {
    expect(iso).toBeInstanceOf(RegExp);
    expect(checks.status(status)).toBe(true);
    expect(checks.status({ ...status, report: undefined, startedAt: undefined })).toBe(true);
    expect(checks.reply(accepted)).toBe(true);
    expect(checks.reply(refused)).toBe(true);
    expect(checks.state(online)).toBe(true);
    expect(checks.state(offline)).toBe(true);
  });

  it('accepts nothing the status schema refuses or changes', () => {
    const cases = [
      ...variants(status),
      ...variants({ ...status, status: 'RUNNING', finishedAt: '2024-02-29T23:59:59Z' }),
    ];
    for (const value of cases) agrees(checks.status, statusMessageSchema)(value);
    expect(cases.filter((value) => checks.status(value)).length).toBeGreaterThan(2);
  });

  it('accepts nothing the reply schema refuses or changes', () => {
    const cases = [
      ...variants(accepted),
      ...variants(refused),
      { ...accepted, error: 'both' },
      { ...refused, id: 7 },
      { deviceId: 'reg-1', id: 7, status: 'FAILURE' },
    ];
    for (const value of cases) agrees(checks.reply, replySchema)(value);
  });

  it('accepts nothing the state schema refuses or changes', () => {
    const cases = [...variants(online), ...variants(offline), { ...offline, groups: [] }];
    for (const value of cases) agrees(checks.state, stateSchema)(value);
  });

  it('decodes the same messages with and without the checks', () => {
    const decodeStatus = (message: object) =>
      decodeControllerMessage(
        'pos',
        'ctl',
        'pos/devices/reg-1/tasks/7/status',
        Buffer.from(JSON.stringify(message)),
      );
    expect(decodeStatus(status)).toEqual({ kind: 'status', message: statusMessageSchema.parse(status) });
    // Refused by the check (unknown key): zod strips it, as it always did.
    expect(decodeStatus({ ...status, x: 1 })).toEqual({
      kind: 'status',
      message: statusMessageSchema.parse(status),
    });
    const bad = decodeStatus({ ...status, seq: 0 });
    expect(bad).toEqual({
      kind: 'invalid',
      error: 'invalid payload: seq: Too small: expected number to be >0',
    });
  });
});
