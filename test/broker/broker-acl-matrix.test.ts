/**
 * The store broker's ACL matrix beyond plain publish/subscribe (docs/broker.md, "Roles and the
 * ACL", "Connecting"): session takeover and persistent-session ownership (a session belongs to
 * its user, the session-theft finding), last wills per role, and the v1.1 cancel topics. Raw
 * packets, so every CONNACK code and every SUBACK code is seen as sent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceClientId } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { silent } from '../support/loggers.ts';
import {
  type ConnectOptions,
  publish,
  RawClient,
  type Received,
  subscribe,
  TYPE,
} from '../support/raw-mqtt.ts';

const NS = 'stores/042';
const USERS = {
  hq: { username: 'hq', password: 'hq-pw' },
  d1: { username: 'd1', password: 'd1-pw' },
  d2: { username: 'd2', password: 'd2-pw' },
  obs: { username: 'obs', password: 'obs-pw' },
} as const;
type Who = keyof typeof USERS;

let broker: StoreBroker;
const opened: RawClient[] = [];
let ids = 0;

beforeAll(async () => {
  broker = new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: 'hq', password: 'hq-pw', role: 'controller' },
      { name: 'd1', password: 'd1-pw', role: 'device' },
      { name: 'd2', password: 'd2-pw', role: 'device' },
      { name: 'obs', password: 'obs-pw', role: 'observer' },
    ],
    logger: silent,
  });
  await broker.start();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((client) => client.drop()));
});
afterAll(() => broker?.stop());

async function connectAs(
  who: Who,
  options: ConnectOptions = {},
): Promise<{ client: RawClient; connack: Received }> {
  const result = await RawClient.connected(broker.port, {
    // A device user connects with its own client id only (contract 6.1).
    clientId: who === 'd1' || who === 'd2' ? deviceClientId(NS, who) : `${who}-${++ids}`,
    ...USERS[who],
    ...options,
  });
  opened.push(result.client);
  return result;
}

async function connected(who: Who, options: ConnectOptions = {}): Promise<RawClient> {
  const { client, connack } = await connectAs(who, options);
  expect(connack.returnCode, `CONNACK for ${who}`).toBe(0);
  return client;
}

async function suback(client: RawClient, filters: string[]): Promise<number[]> {
  const id = ++ids;
  client.send(
    subscribe(
      id,
      filters.map((f) => [f, 1]),
    ),
  );
  return (await client.next((p) => p.type === TYPE.SUBACK && p.id === id)).codes ?? [];
}

describe('session takeover and ownership', () => {
  it('a persistent session belongs to its user: others get CONNACK 5 and never its queued script; the owner gets it', async () => {
    const sessionId = deviceClientId(NS, 'd1');
    const device = await connected('d1', { clientId: sessionId, clean: false });
    expect(await suback(device, [`${NS}/devices/d1/scripts`])).toEqual([1]);
    await device.end();
    const hq = await connected('hq');
    hq.send(publish({ topic: `${NS}/devices/d1/scripts`, payload: '{"script":"queued"}', qos: 1, id: 1 }));
    await hq.next(TYPE.PUBACK);
    // Resume (the theft of the finding) and discard (CleanSession 1) are both refused, for every
    // other role; the refused connection is closed and gets nothing.
    for (const [who, clean] of [
      ['d2', false],
      ['d2', true],
      ['obs', false],
      ['hq', false],
      ['hq', true],
    ] as const) {
      const { client, connack } = await connectAs(who, { clientId: sessionId, clean });
      expect([connack.returnCode, connack.sessionPresent], `${who} clean=${clean}`).toEqual([5, false]);
      await client.waitClosed();
      expect(client.pending(TYPE.PUBLISH), `${who} clean=${clean}`).toEqual([]);
    }
    const { client: owner, connack } = await connectAs('d1', { clientId: sessionId, clean: false });
    expect([connack.returnCode, connack.sessionPresent]).toEqual([0, true]);
    const script = await owner.next(TYPE.PUBLISH);
    expect(script.payload?.toString()).toBe('{"script":"queued"}');
  });

  it('the owner starting clean gives the session up: then another user may use the id', async () => {
    const sessionId = `given-up-${++ids}`;
    const first = await connected('hq', { clientId: sessionId, clean: false });
    await first.end();
    const clean = await connected('hq', { clientId: sessionId, clean: true });
    await clean.end();
    await connected('obs', { clientId: sessionId, clean: true });
  });

  it('a connected client id: another user gets CONNACK 2 and the owner stays; the same user takes it over', async () => {
    const sessionId = `live-${++ids}`;
    const owner = await connected('hq', { clientId: sessionId });
    const { client: other, connack } = await connectAs('obs', { clientId: sessionId });
    expect(connack.returnCode).toBe(2);
    await other.waitClosed();
    await owner.settle();
    const again = await connected('hq', { clientId: sessionId });
    await owner.waitClosed();
    await again.settle();
  });
});

describe('last wills per role', () => {
  const cases: [Who, { topic: string; retain?: boolean; payload?: string }, number][] = [
    ['d1', { topic: `${NS}/devices/d1/state`, retain: true }, 0],
    ['d1', { topic: `${NS}/devices/d2/state`, retain: true }, 5],
    ['d1', { topic: `${NS}/devices/d1/tasks/1/status` }, 5],
    ['d1', { topic: `${NS}/replies/hq/x` }, 5],
    ['d1', { topic: `${NS}/devices/d1/cancel` }, 5],
    ['hq', { topic: `${NS}/replies/hq/gone` }, 0],
    ['hq', { topic: `${NS}/replies/hq/gone`, retain: true }, 5],
    ['hq', { topic: `${NS}/devices/d1/state`, retain: true }, 5],
    ['hq', { topic: `${NS}/devices/d1/scripts` }, 0],
    ['hq', { topic: `${NS}/devices/d1/scripts`, retain: true }, 5],
    ['hq', { topic: `${NS}/devices/d1/cancel`, retain: true }, 5],
    ['hq', { topic: 'elsewhere/x' }, 5],
    ['obs', { topic: `${NS}/replies/obs/gone` }, 5],
  ];
  it.each(cases)('%s with a will on %o: CONNACK %i', async (who, will, code) => {
    const { client, connack } = await connectAs(who, {
      will: { topic: will.topic, payload: will.payload ?? 'x', qos: 1, retain: will.retain ?? false },
    });
    expect(connack.returnCode).toBe(code);
    if (code !== 0) await client.waitClosed();
  });

  it("a device's own will reaches controllers when it drops; a refused will is never published", async () => {
    const watcher = await connected('hq');
    expect(await suback(watcher, [`${NS}/devices/+/state`])).toEqual([1]);
    const { client: refused } = await connectAs('d2', {
      will: { topic: `${NS}/devices/d1/state`, payload: 'forged', qos: 1, retain: true },
    });
    await refused.waitClosed();
    const device = await connected('d1', {
      will: { topic: `${NS}/devices/d1/state`, payload: 'offline', qos: 1, retain: true },
    });
    await device.drop();
    // (the retained state left by earlier tests arrives first)
    const will = await watcher.next((p) => p.type === TYPE.PUBLISH && p.payload?.toString() === 'offline');
    expect([will.topic, will.retain]).toEqual([`${NS}/devices/d1/state`, false]);
    await watcher.settle();
    expect(watcher.packets.filter((p) => p.payload?.toString() === 'forged')).toEqual([]);
  });
});

describe('cancel topics (v1.1)', () => {
  /** Publishes as `who`, then proves with a marker whether a controller on `<ns>/#` received it. */
  async function delivered(who: Who, topic: string, retain = false): Promise<boolean> {
    const watcher = await connected('hq');
    await suback(watcher, [`${NS}/#`]);
    await watcher.settle();
    const publisher = await connected(who);
    const payload = `{"id":${++ids}}`;
    publisher.send(publish({ topic, payload, qos: 1, retain, id: 9 }));
    expect((await publisher.next(TYPE.PUBACK)).id).toBe(9); // acknowledged either way
    const marker = `marker-${ids}`;
    watcher.send(publish({ topic: `${NS}/replies/hq/m`, payload: marker, qos: 1, id: 10 }));
    await watcher.next((p) => p.type === TYPE.PUBLISH && p.payload?.toString() === marker);
    return watcher.packets.some((p) => p.topic === topic && p.payload?.toString() === payload);
  }

  it.each([
    ['hq', `${NS}/devices/d1/cancel`, false, true],
    ['hq', `${NS}/groups/all/cancel`, false, true],
    ['hq', `${NS}/devices/d1/cancel`, true, false],
    ['hq', `${NS}/groups/all/cancel`, true, false],
    ['d1', `${NS}/devices/d1/cancel`, false, false],
    ['d1', `${NS}/devices/d2/cancel`, false, false],
    ['d1', `${NS}/groups/all/cancel`, false, false],
    ['obs', `${NS}/devices/d1/cancel`, false, false],
  ] as const)('%s publishing %s (retained: %s) is delivered: %s', async (who, topic, retain, expected) => {
    expect(await delivered(who, topic, retain)).toBe(expected);
  });

  it('a device subscribes to its own and group cancel topics only', async () => {
    const device = await connected('d1');
    const filters = [
      `${NS}/devices/d1/cancel`,
      `${NS}/groups/all/cancel`,
      `${NS}/groups/+/cancel`,
      `${NS}/devices/d2/cancel`,
      `${NS}/devices/+/cancel`,
      `${NS}/groups/#`,
    ];
    expect(await suback(device, filters)).toEqual([1, 1, 1, 0x80, 0x80, 0x80]);
  });

  it('a device receives a cancel for itself and for its group, not one for another device', async () => {
    const device = await connected('d1');
    await suback(device, [`${NS}/devices/d1/cancel`, `${NS}/groups/all/cancel`]);
    const hq = await connected('hq');
    for (const [index, topic] of [
      `${NS}/devices/d2/cancel`,
      `${NS}/devices/d1/cancel`,
      `${NS}/groups/all/cancel`,
    ].entries()) {
      hq.send(publish({ topic, payload: `{"requestId":"r${index}"}`, qos: 1, id: index + 1 }));
      await hq.next((p) => p.type === TYPE.PUBACK && p.id === index + 1);
    }
    const received = [await device.next(TYPE.PUBLISH), await device.next(TYPE.PUBLISH)];
    expect(received.map((p) => p.topic)).toEqual([`${NS}/devices/d1/cancel`, `${NS}/groups/all/cancel`]);
  });
});
