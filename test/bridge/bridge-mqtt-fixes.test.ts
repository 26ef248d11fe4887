/**
 * bridge/mqtt-fixes/forget-replies.ts: the check of the mqtt.js members the bridge touches to
 * forget unacknowledged replies. It passes on the mqtt.js in package-lock.json and names the
 * member when one is missing (a copy of a real client with it removed).
 */
import { connect } from 'mqtt';
import { describe, expect, it } from 'vitest';
import {
  assertMqttInternals,
  forgetReplies,
  MqttInternalsError,
} from '../../bridge/mqtt-fixes/forget-replies.ts';

/** A real client that never connects (manualConnect: no socket, no timer, nothing to end). */
function client() {
  return connect('mqtt://127.0.0.1:1', { manualConnect: true, reconnectPeriod: 0 });
}

describe('the guard on mqtt.js internals', () => {
  it('passes on the mqtt.js in use', () => {
    const c = client();
    expect(() => assertMqttInternals(c)).not.toThrow();
  });

  it.each([
    ['outgoing', (c: Record<string, unknown>) => delete c.outgoing],
    ['outgoingStore.del', (c: Record<string, unknown>) => (c.outgoingStore = {})],
    ['messageIdProvider.deallocate', (c: Record<string, unknown>) => (c.messageIdProvider = {})],
  ])('fails naming client.%s when it is missing', (member, remove) => {
    const real = client();
    const copy = Object.assign(Object.create(Object.getPrototypeOf(real)), real) as Record<string, unknown>;
    remove(copy);
    let thrown: unknown;
    try {
      assertMqttInternals(copy as never);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MqttInternalsError);
    expect((thrown as MqttInternalsError).member).toBe(member);
    expect((thrown as Error).message).toContain(`client.${member} is missing`);
  });

  it('forgets only the unacknowledged messages recognised as replies, releasing their ids', async () => {
    const c = client();
    const reply = (): void => undefined;
    const status = (): void => undefined;
    const id1 = c.messageIdProvider.allocate()!;
    const id2 = c.messageIdProvider.allocate()!;
    c.outgoing[id1] = { volatile: false, cmd: 'publish', cb: reply } as never;
    c.outgoing[id2] = { volatile: false, cmd: 'publish', cb: status } as never;
    const forgotten: number[] = [];
    forgetReplies(
      c,
      (cb) => cb === reply,
      (id) => forgotten.push(id),
    );
    expect(forgotten).toEqual([id1]);
    expect(Object.keys(c.outgoing).map(Number)).toEqual([id2]);
    // The released id is handed out again.
    expect(c.messageIdProvider.register(id1)).toBe(true);
  });
});
