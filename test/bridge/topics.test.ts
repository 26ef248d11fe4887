import { describe, expect, it } from 'vitest';
import {
  assertNamespace,
  decodePayload,
  deviceCancelSchema,
  groupCancelSchema,
  parseTopic,
  scriptSubmissionSchema,
  statusMessageSchema,
  topics,
} from '../../bridge/contract/topics.ts';

describe('topic contract (docs/mqtt.md)', () => {
  it('builds every topic of the contract', () => {
    expect(topics.state('pos', 'reg-1')).toBe('pos/devices/reg-1/state');
    expect(topics.taskStatus('stores/042', 'reg_2', 1795000000000001)).toBe(
      'stores/042/devices/reg_2/tasks/1795000000000001/status',
    );
    expect(topics.deviceScripts('pos', 'r')).toBe('pos/devices/r/scripts');
    expect(topics.groupScripts('pos', 'all')).toBe('pos/groups/all/scripts');
    expect(topics.deviceCancel('stores/042', 'r')).toBe('stores/042/devices/r/cancel');
    expect(topics.groupCancel('pos', 'front')).toBe('pos/groups/front/cancel');
    expect(() => topics.deviceCancel('pos', 'a/b')).toThrow(/invalid device id/);
    expect(() => topics.groupCancel('pos', '#')).toThrow(/invalid group id/);
    expect(topics.allStates('pos')).toBe('pos/devices/+/state');
    expect(topics.deviceReply('stores/042', 'r', 'q-1')).toBe('stores/042/devices/r/replies/q-1');
    expect(topics.allReplies('pos')).toBe('pos/devices/+/replies/#');
  });

  it('never lets a wildcard or a slash into a topic level', () => {
    for (const bad of ['a/b', '+', '#', '', 'x'.repeat(65), 'a b', 'ü']) {
      expect(() => topics.state('pos', bad)).toThrow(/invalid device id/);
      expect(() => topics.groupScripts('pos', bad)).toThrow(/invalid group id/);
    }
    expect(() => assertNamespace('pos/+')).toThrow();
    expect(() => assertNamespace('$SYS')).toThrow();
    expect(() => assertNamespace('pos//x')).toThrow();
    expect(assertNamespace('stores/042')).toBe('stores/042');
  });

  it('parses topics back, including namespaces with several levels', () => {
    expect(parseTopic('stores/042', 'stores/042/devices/r1/state')).toEqual({
      kind: 'state',
      deviceId: 'r1',
    });
    expect(parseTopic('pos', 'pos/devices/r1/tasks/17/status')).toEqual({
      kind: 'taskStatus',
      deviceId: 'r1',
      taskId: 17,
    });
    expect(parseTopic('pos', 'pos/devices/r1/scripts')).toEqual({ kind: 'deviceScripts', deviceId: 'r1' });
    expect(parseTopic('pos', 'pos/groups/all/scripts')).toEqual({ kind: 'groupScripts', group: 'all' });
    expect(parseTopic('pos', 'pos/devices/r1/cancel')).toEqual({ kind: 'deviceCancel', deviceId: 'r1' });
    expect(parseTopic('a/b', 'a/b/devices/r1/replies/q-1')).toEqual({
      kind: 'reply',
      deviceId: 'r1',
      requestId: 'q-1',
    });
    expect(parseTopic('pos', 'pos/devices/r1/replies/')).toBeUndefined();
    expect(parseTopic('pos', 'pos/devices/r1/replies/q/x')).toBeUndefined();
    expect(parseTopic('a/b', 'a/b/groups/front/cancel')).toEqual({ kind: 'groupCancel', group: 'front' });
    expect(parseTopic('pos', 'pos/groups/front/cancel/x')).toBeUndefined();
    expect(parseTopic('pos', 'other/devices/r1/state')).toBeUndefined();
    expect(parseTopic('pos', 'pos/devices/r1/tasks/01/status')).toBeUndefined();
    expect(parseTopic('pos', 'pos/devices/r1/tasks/99999999999999999/status')).toBeUndefined();
    expect(parseTopic('pos', 'pos/devices/r1/state/extra')).toBeUndefined();
  });

  it('cancel payloads: exactly one of id and requestId on a device topic, requestId only on a group topic', () => {
    expect(deviceCancelSchema.safeParse({ id: 5 }).success).toBe(true);
    expect(deviceCancelSchema.safeParse({ requestId: 'r', replyTo: 'pos/+' }).success).toBe(true);
    expect(deviceCancelSchema.safeParse({ id: 5, requestId: 'r' }).success).toBe(false);
    expect(deviceCancelSchema.safeParse({}).success).toBe(false);
    expect(deviceCancelSchema.safeParse({ id: 0 }).success).toBe(false);
    expect(deviceCancelSchema.safeParse({ id: 1.5 }).success).toBe(false);
    expect(groupCancelSchema.safeParse({ requestId: 'r' }).success).toBe(true);
    expect(groupCancelSchema.safeParse({ id: 5, requestId: 'r' }).success).toBe(false);
    expect(groupCancelSchema.safeParse({ id: 5 }).success).toBe(false);
    expect(decodePayload(deviceCancelSchema, '{"id":1,"requestId":"r"}')).toEqual({
      ok: false,
      error: 'invalid payload: exactly one of id and requestId',
    });
  });

  it('decodes payloads with a message instead of a throw', () => {
    expect(
      decodePayload(scriptSubmissionSchema, '{"script":"PRINT a","requestId":"r1","notAfter":1}'),
    ).toEqual({
      ok: true,
      value: { script: 'PRINT a', requestId: 'r1', notAfter: 1 },
    });
    expect(decodePayload(scriptSubmissionSchema, 'not json')).toEqual({
      ok: false,
      error: 'payload is not valid JSON',
    });
    // The shape only: whether a script is acceptable (blank, size) is the engine's decision.
    expect(decodePayload(scriptSubmissionSchema, '{"script":""}')).toEqual({
      ok: true,
      value: { script: '' },
    });
    const bad = decodePayload(scriptSubmissionSchema, Buffer.from('{"script":7,"requestId":""}'));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/script.*requestId/);
    // A v1.1 replyTo is ignored (contract 3.1): stripped, whatever it holds.
    expect(decodePayload(scriptSubmissionSchema, '{"script":"x","replyTo":"a/+/b"}')).toEqual({
      ok: true,
      value: { script: 'x' },
    });
    const status = decodePayload(statusMessageSchema, {
      toString: () => '',
    } as unknown as string);
    expect(status.ok).toBe(false);
  });
});
