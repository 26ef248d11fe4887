/**
 * The store broker's limits before login (docs/broker.md, "Security"): maximum packet size
 * enforced before the packet is buffered, the CONNECT time-out, the connection cap. Raw sockets;
 * every wait is for an event (a close, a CONNACK) with a time-out.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BROKER_LIMITS, type StoreBroker } from '../../broker/store-broker.ts';
import { brokerPerTest, HQ } from '../support/broker-per-test.ts';
import { connect, publish, RawClient, subscribe, TYPE } from '../support/raw-mqtt.ts';
import { CTL, storeBroker } from '../support/store-brokers.ts';
import { until } from '../support/waits.ts';

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
      maxPendingPerAddress: 32,
      // Contract 6.1, after login: a device's --retain + --max-queue + 16, 64 QoS 2 awaiting
      // PUBREL, a device's default --output-cap.
      maxRetainedStatuses: 1144,
      maxAwaitingPubrel: 64,
      maxReportBytes: 1024 * 1024,
      maxSessionInflight: 1000,
      loginMaxFailures: 10,
      loginWindowMs: 60_000,
      emitterConcurrency: 1000,
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

describe('--max-connections and --max-pending-per-address', () => {
  /** `count` connections from 127.0.0.2 that never send CONNECT; resolves with those still open. */
  async function idleFromElsewhere(port: number, count: number): Promise<RawClient[]> {
    const idle: RawClient[] = [];
    for (let i = 0; i < count; i += 1) idle.push(await RawClient.open(port, '127.0.0.1', '127.0.0.2'));
    opened.push(...idle);
    return idle;
  }

  it('idle sockets from one address never lock logged-in clients out', async () => {
    // The cap on logged-in clients is below the idle sockets: they must not count against it.
    const started = await brokers.start({ maxConnections: 5, connectTimeoutMs: 60_000 });
    const idle = await idleFromElsewhere(started.port, 40);
    // 32 (the default per address) stay, the other 8 are closed at once, before any byte.
    await until(() => idle.filter((c) => c.closed).length === 8, 'the connections past 32 to be closed');
    expect(started.stats.connectionsRefused).toBe(8);
    for (let i = 0; i < 5; i += 1) {
      const { client, connack } = await RawClient.connected(started.port, { clientId: `reg-${i}`, ...USER });
      opened.push(client);
      expect(connack.returnCode).toBe(0);
    }
    expect(started.stats.connections).toBe(32 + 5);
  });

  it('caps logged-in clients: a login past --max-connections gets CONNACK 3; a takeover is not a new client', async () => {
    const started = await brokers.start({ maxConnections: 2 });
    for (const clientId of ['a', 'b']) {
      const { client, connack } = await RawClient.connected(started.port, { clientId, ...USER });
      opened.push(client);
      expect(connack.returnCode).toBe(0);
    }
    const { client: refused, connack } = await RawClient.connected(started.port, { clientId: 'c', ...USER });
    opened.push(refused);
    expect(connack.returnCode).toBe(3);
    await refused.waitClosed();
    // The same client id again replaces the connected one ([MQTT-3.1.4-2]).
    const takeover = await RawClient.connected(started.port, { clientId: 'b', ...USER });
    opened.push(takeover.client);
    expect(takeover.connack.returnCode).toBe(0);
    await until(() => started.stats.connections === 2, 'the replaced connection to close');
    expect(started.stats.connectionsRefused).toBe(1);
  });

  it('counts pending connections per address: a login frees its place', async () => {
    const started = await brokers.start({ maxPendingPerAddress: 2, connectTimeoutMs: 60_000 });
    const [first, second] = await idleFromElsewhere(started.port, 2);
    const third = (await idleFromElsewhere(started.port, 1))[0]!;
    await third.waitClosed();
    expect(third.packets).toEqual([]);
    // Another address is not affected.
    const { client: local, connack } = await RawClient.connected(started.port, {
      clientId: 'local',
      ...USER,
    });
    opened.push(local);
    expect(connack.returnCode).toBe(0);
    // One of the two logs in: its place before login is free again.
    first!.send(connect({ clientId: 'from-2', ...USER }));
    expect((await first!.next(TYPE.CONNACK)).returnCode).toBe(0);
    const fourth = (await idleFromElsewhere(started.port, 1))[0]!;
    fourth.send(connect({ clientId: 'from-2-again', ...USER }));
    expect((await fourth.next(TYPE.CONNACK)).returnCode).toBe(0);
    expect(second!.closed).toBe(false);
    expect(started.stats.connectionsRefused).toBe(1);
  });
});

describe('MQTT over WebSocket (--ws-port)', () => {
  const running: StoreBroker[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((b) => b.stop()));
  });

  /** A raw WebSocket handshake on `port`; resolves with the socket and what it received after the 101. */
  async function upgraded(port: number): Promise<{ socket: Socket; received: () => Buffer }> {
    const socket = createConnection({ port, host: '127.0.0.1' });
    let buffer = Buffer.alloc(0);
    let upgradedAt = -1;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (upgradedAt < 0 && buffer.includes('\r\n\r\n')) upgradedAt = buffer.indexOf('\r\n\r\n') + 4;
    });
    socket.on('error', () => undefined);
    socket.write(
      'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
        'Sec-WebSocket-Protocol: mqtt\r\n\r\n',
    );
    await until(() => upgradedAt >= 0, 'the 101 answer');
    expect(buffer.subarray(0, 12).toString()).toBe('HTTP/1.1 101');
    return { socket, received: () => buffer.subarray(upgradedAt) };
  }

  it('closes a connection announcing a frame over --max-packet-bytes before buffering it (1009)', async () => {
    // A long CONNECT time-out: only the frame limit may close this connection within the test.
    const broker = storeBroker('pos', {
      wsPort: 0,
      limits: { maxPacketBytes: 64 * 1024, connectTimeoutMs: 60_000 },
    });
    running.push(broker);
    await broker.start();
    const { socket, received } = await upgraded(broker.wsPort!);
    // A masked binary frame announcing 50 MiB, and its first 16 KiB: `ws` used to wait for all of it.
    const header = Buffer.alloc(14);
    header[0] = 0x82;
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(50 * 1024 * 1024), 2);
    socket.write(Buffer.concat([header, Buffer.alloc(16 * 1024)]));
    // The close frame: status 1009 "message too big".
    await until(() => received().includes(Buffer.from([0x88, 0x02, 0x03, 0xf1])), 'a close frame 1009');
    socket.destroy();
  });

  it('still carries MQTT packets up to the limit', async () => {
    const broker = storeBroker('pos', { wsPort: 0, limits: { maxPacketBytes: 64 * 1024 } });
    running.push(broker);
    await broker.start();
    const { socket, received } = await upgraded(broker.wsPort!);
    const packet = connect({ clientId: 'ws-client', ...CTL });
    const frame = Buffer.concat([Buffer.from([0x82, 0x80 | packet.length, 0, 0, 0, 0]), packet]);
    socket.write(frame);
    // CONNACK 0, in one or more (unmasked, short) binary frames from the server.
    const payload = (): Buffer => {
      const bytes = received();
      const parts: Buffer[] = [];
      for (let at = 0; at + 2 <= bytes.length && bytes[at] === 0x82; at += 2 + bytes[at + 1]!)
        parts.push(bytes.subarray(at + 2, at + 2 + bytes[at + 1]!));
      return Buffer.concat(parts);
    };
    await until(() => payload().length >= 4, 'CONNACK');
    expect([...payload().subarray(0, 4)]).toEqual([0x20, 0x02, 0x00, 0x00]);
    socket.destroy();
  });
});
