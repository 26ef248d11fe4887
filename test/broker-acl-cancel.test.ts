/**
 * The store broker's rules for the cancel topics (contract section 1.1): controllers publish both
 * cancel topics (never retained; a zero-byte clear allowed), devices and observers publish none,
 * a device subscribes to its own cancel topic and to group cancel topics, never another device's.
 * Over real sockets the MQTT cancel contract suite (test/bridge-contract-cancel.test.ts) runs
 * through these rules on the store broker.
 */
import { describe, expect, it } from 'vitest';
import { AccessRules } from '../broker/access-rules.ts';

const rules = new AccessRules('stores/042');
const publish = (topic: string, retain = false, payloadLength = 10) => ({ topic, retain, payloadLength });

describe('cancel topics in the store broker ACL', () => {
  it('controllers publish device and group cancels, not retained (a clear is allowed)', () => {
    for (const topic of ['stores/042/devices/till-1/cancel', 'stores/042/groups/front/cancel']) {
      expect(rules.canPublish('controller', 'hq', publish(topic))).toEqual({ allowed: true });
      expect(rules.canPublish('controller', 'hq', publish(topic, true))).toEqual({
        allowed: false,
        reason: 'scripts and cancels must not be retained; only a zero-byte retained clear is allowed',
      });
      expect(rules.canPublish('controller', 'hq', publish(topic, true, 0))).toEqual({ allowed: true });
    }
  });

  it('devices and observers publish no cancel, not even their own', () => {
    for (const topic of ['stores/042/devices/till-1/cancel', 'stores/042/groups/all/cancel']) {
      expect(rules.canPublish('device', 'till-1', publish(topic)).allowed).toBe(false);
      expect(rules.canPublish('observer', 'obs', publish(topic)).allowed).toBe(false);
    }
  });

  it("a device subscribes to its own and to group cancel topics, never another device's", () => {
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/devices/till-1/cancel')).toBe(true);
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/groups/front/cancel')).toBe(true);
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/groups/+/cancel')).toBe(true);
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/devices/till-2/cancel')).toBe(false);
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/devices/+/cancel')).toBe(false);
    expect(rules.canSubscribe('device', 'till-1', 'stores/042/groups/#')).toBe(false);
  });
});
