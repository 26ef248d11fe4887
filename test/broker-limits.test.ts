/**
 * The store broker's limits before login (docs/broker.md, "Security"): maximum packet size
 * enforced before the packet is buffered, the CONNECT time-out, the connection cap. Raw sockets;
 * every wait is for an event (a close, a CONNACK) with a time-out.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_BROKER_LIMITS } from '../broker/store-broker.ts';
import { brokerPerTest, HQ } from './support/broker-per-test.ts';
import { connect, publish, RawClient, subscribe, TYPE } from './support/raw-mqtt.ts';
import { until } from './support/waits.ts';

const USER = HQ;
const brokers = brokerPerTest();
const { opened } = brokers;

async function raw(port: number): Promise<RawClient> {
  const client = await RawClient.open(port);
  opened.push(client);
  return client;
}

/** The fixed header of a CONNECT announcing `remaining` bytes, and the start of its body. */
function announcedConnect(remaining: number): Buffer {
  const length: number[] = [];
  let rest = remaining;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    length.push(byte);
  } while (rest > 0);
  return Buffer.concat([Buffer.from([0x10, ...length]), Buffer.alloc(64 * 1024, 0x41)]);
}

describe('maximum packet size', () => {
  it('defaults to 2 MiB + 64 KiB, 10 s CONNECT time-out, 1000 connections, 10 failed logins a minute, 1000 messages in the emitter', async () => {
    const { limits } = await brokers.start({});
    expect(limits).toEqual({
      maxPacketBytes: 2 * 1024 * 1024 + 64 * 1024,
      connectTimeoutMs: 10_000,
      maxConnections: 1000,
      // Contract 6.1, after login: a device's --retain + --max-queue + 16, 64 QoS 2 awaiting
      // PUBREL, a device's default --output-cap.
      maxRetainedStatuses: 1144,
      maxAwaitingPubrel: 64,
      maxReportBytes: 1024 * 1024,
      loginMaxFailures: 10,
      loginWindowMs: 60_000,
      maxSessionBacklog: 1000,
      sessionBacklogWaitMs: 2000,
      emitterConcurrency: 1000,
      readBatchPackets: 16,
    });
    expect(DEFAULT_BROKER_LIMITS).toEqual(limits);
  });

  it('closes a connection announcing a 240 MiB CONNECT before its body arrives', async () => {
    const { port } = await brokers.start({});
    const client = await raw(port);
    client.send(announcedConnect(240 * 1024 * 1024)); // 64 KiB of 240 MiB sent, the rest never
    await client.waitClosed();
    expect(client.packets).toEqual([]);
    // The broker is fine: a normal client connects.
    const { connack } = await RawClient.connected(port, { clientId: 'after', ...USER });
    expect(connack.returnCode).toBe(0);
  });

  it('accepts a packet of exactly --max-packet-bytes and closes at one byte more', async () => {
    const limit = 4096;
    const { port } = await brokers.start({ maxPacketBytes: limit });
    const { client: sub } = await RawClient.connected(port, { clientId: 'sub', ...USER });
    opened.push(sub);
    sub.send(subscribe(1, [['pos/replies/big', 0]]));
    await sub.next(TYPE.SUBACK);
    const { client: pub } = await RawClient.connected(port, { clientId: 'pub', ...USER });
    opened.push(pub);
    const topic = 'pos/replies/big';
    // PUBLISH QoS 0: 1 byte type, 2 bytes remaining length (< 16384), 2 + topic, payload.
    const fits = publish({ topic, payload: Buffer.alloc(limit - 3 - 2 - topic.length, 0x61) });
    expect(fits.length).toBe(limit);
    pub.send(fits);
    expect((await sub.next(TYPE.PUBLISH)).payload?.length).toBe(limit - 5 - topic.length);
    pub.send(publish({ topic, payload: Buffer.alloc(limit - 2 - 2 - topic.length, 0x61) }));
    await pub.waitClosed();
    await sub.settle();
    expect(sub.pending(TYPE.PUBLISH)).toEqual([]);
  });
});

describe('CONNECT time-out', () => {
  it('closes a connection that sends nothing, and one that sends half a CONNECT', async () => {
    const { port } = await brokers.start({ connectTimeoutMs: 300 });
    const silent = await raw(port);
    const slow = await raw(port);
    slow.send(connect({ clientId: 'slow', ...USER }).subarray(0, 10));
    const started = Date.now();
    await Promise.all([silent.waitClosed(5000), slow.waitClosed(5000)]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect([...silent.packets, ...slow.packets]).toEqual([]);
  });

  it('leaves a client that completed its CONNECT in time alone', async () => {
    const { port } = await brokers.start({ connectTimeoutMs: 300 });
    const { client, connack } = await RawClient.connected(port, {
      clientId: 'in-time',
      keepalive: 0,
      ...USER,
    });
    opened.push(client);
    expect(connack.returnCode).toBe(0);
    // Longer than the time-out: still connected.
    await new Promise<void>((resolve) => setTimeout(resolve, 600).unref());
    await client.settle();
  });
});

describe('--max-connections', () => {
  it('closes connections beyond the cap at once (logged in or not) and admits again when one goes', async () => {
    const started = await brokers.start({ maxConnections: 3 });
    const idle = [await raw(started.port), await raw(started.port)];
    const { client: loggedIn } = await RawClient.connected(started.port, { clientId: 'in', ...USER });
    opened.push(loggedIn);
    const refused = await raw(started.port);
    refused.send(connect({ clientId: 'refused', ...USER }));
    await refused.waitClosed();
    expect(refused.packets).toEqual([]);
    expect(started.stats.connectionsRefused).toBe(1);
    await idle[0]?.drop();
    await until(() => started.stats.connections < 3, 'the broker to see the close');
    const { client: later, connack } = await RawClient.connected(started.port, {
      clientId: 'later',
      ...USER,
    });
    opened.push(later);
    expect(connack.returnCode).toBe(0);
    expect(started.stats.connections).toBe(3);
  });
});
