/**
 * The store broker parses a bounded batch of packets per connection (broker/read-batch.ts,
 * `readBatchPackets`): the rest waits as bytes until the batch is handled. Checked on a stream
 * read the way aedes 1.2 reads it (mqtt-packet's real parser, a batch read again once all its
 * packets are handled), with the bytes cut at every position, and on a real store broker over
 * sockets: order, large packets in pieces, and a DISCONNECT at the end of a burst all survive.
 */
import { createRequire } from 'node:module';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { boundReadBatch, PacketBoundaries } from '../broker/read-batch.ts';
import { brokerPerTest, HQ } from './support/broker-per-test.ts';
import { ack, disconnect, pingreq, publish, RawClient, subscribe, TYPE } from './support/raw-mqtt.ts';
import { storeBroker } from './support/store-brokers.ts';
import { until } from './support/waits.ts';

const require = createRequire(import.meta.url);
const mqttPacket = require('mqtt-packet') as {
  parser(): { parse(buf: Buffer): number; on(event: 'packet', fn: (packet: { cmd: string }) => void): void };
};

/** 40 packets of every size class: PINGREQ (no body), small publishes, 1- to 3-byte lengths. */
function packets(): Buffer[] {
  const list: Buffer[] = [];
  for (let i = 0; i < 40; i += 1) {
    if (i % 7 === 0) list.push(pingreq());
    else
      list.push(
        publish({ topic: `t/${i}`, payload: Buffer.alloc([3, 130, 20_000][i % 3]!, i), qos: 1, id: i + 1 }),
      );
  }
  return list;
}

/**
 * Reads `stream` as aedes 1.2 does: `read(null)` when the batch in hand is handled (one turn per
 * packet) or on 'readable' when idle; returns what was parsed and the largest batch.
 */
function aedesLikeReader(stream: PassThrough): { parsed: string[]; largest: () => number } {
  const parser = mqttPacket.parser();
  const parsed: string[] = [];
  let inBatch = 1;
  let largest = 0;
  const nextBatch = (): void => {
    inBatch -= 1;
    if (inBatch > 0) return;
    inBatch = 0;
    const buf = stream.read() as Buffer | null; // aedes passes null: the same as no size
    if (buf) parser.parse(buf);
  };
  parser.on('packet', (packet) => {
    inBatch += 1;
    largest = Math.max(largest, inBatch);
    parsed.push(packet.cmd);
    setImmediate(nextBatch);
  });
  stream.on('readable', nextBatch);
  return { parsed, largest: () => largest };
}

describe('PacketBoundaries', () => {
  it('cuts after the n-th whole packet only when another whole packet follows', () => {
    const [a, b, c] = [pingreq(), publish({ topic: 't', payload: 'x' }), pingreq()];
    const all = Buffer.concat([a, b, c]);
    expect(new PacketBoundaries().cut(all, 1)).toBe(a.length);
    expect(new PacketBoundaries().cut(all, 2)).toBe(a.length + b.length);
    expect(new PacketBoundaries().cut(all, 3)).toBe(all.length);
    // Two whole packets and half of a third: the half stays with the second.
    const half = Buffer.concat([a, b, c.subarray(0, 1)]);
    expect(new PacketBoundaries().cut(half, 1)).toBe(a.length);
    expect(new PacketBoundaries().cut(half, 2)).toBe(half.length);
  });

  it('follows a packet whose header and body arrive in pieces', () => {
    const big = publish({ topic: 't', payload: Buffer.alloc(20_000) }); // 3-byte remaining length
    const next = pingreq();
    const all = Buffer.concat([big, next, next]);
    for (const split of [1, 2, 3, 100]) {
      const boundaries = new PacketBoundaries();
      expect(boundaries.cut(all.subarray(0, split), 1)).toBe(split);
      expect(boundaries.cut(all.subarray(split), 1)).toBe(big.length - split);
    }
  });
});

describe('boundReadBatch on an aedes-like reader', () => {
  it('hands over at most n packets a batch, all of them in order, wherever the bytes are cut', async () => {
    const list = packets();
    const bytes = Buffer.concat(list);
    for (const [max, piece] of [
      [1, 1],
      [4, 7],
      [4, 1000],
      [16, 65_536],
    ] as const) {
      const stream = new PassThrough();
      const reader = aedesLikeReader(stream);
      expect(boundReadBatch(stream, max)).toBe(true);
      for (let at = 0; at < bytes.length; at += piece) stream.write(bytes.subarray(at, at + piece));
      await until(() => reader.parsed.length === list.length, `${list.length} packets (max ${max})`, 10_000);
      expect(reader.parsed).toEqual(list.map((p) => (p[0] === 0xc0 ? 'pingreq' : 'publish')));
      expect(reader.largest()).toBeLessThanOrEqual(max);
    }
  });

  it('changes nothing on a stream without exactly one reader', () => {
    const stream = new PassThrough();
    expect(boundReadBatch(stream, 4)).toBe(false);
  });
});

const USER = HQ;
const brokers = brokerPerTest();
const { opened } = brokers;

async function client(port: number, clientId: string, will?: { topic: string; payload: string }) {
  const { client: c, connack } = await RawClient.connected(port, {
    clientId,
    ...USER,
    ...(will && { will }),
  });
  opened.push(c);
  expect(connack.returnCode).toBe(0);
  return c;
}

describe('the store broker reading in bounded batches', () => {
  it('defaults to 16 packets and refuses less than 1 with a clear error', async () => {
    expect((await brokers.start({})).limits.readBatchPackets).toBe(16);
    await brokers.stop();
    expect(() => storeBroker('pos', { users: [], limits: { readBatchPackets: 0 } })).toThrow(
      /readBatchPackets must be a whole number of at least 1/,
    );
  });

  it('delivers a burst of 300 publishes in one write, then a large one sent in pieces, in order', async () => {
    const b = await brokers.start({ readBatchPackets: 4 });
    const sub = await client(b.port, 'sub');
    sub.send(subscribe(1, [['pos/replies/hq/#', 1]]));
    await sub.next(TYPE.SUBACK);
    const pub = await client(b.port, 'pub');
    const burst: Buffer[] = [];
    for (let i = 1; i <= 300; i += 1)
      burst.push(publish({ topic: 'pos/replies/hq/r', payload: `m${i}`, qos: 1, id: i }));
    pub.send(...burst);
    const large = publish({
      topic: 'pos/replies/hq/r',
      payload: Buffer.alloc(200_000, 0x61),
      qos: 1,
      id: 301,
    });
    for (const [from, to] of [
      [0, 2],
      [2, 3],
      [3, 70_000],
      [70_000, large.length],
    ] as const)
      pub.send(large.subarray(from, to));
    const got: string[] = [];
    for (let i = 0; i < 301; i += 1) {
      const p = await sub.next(TYPE.PUBLISH);
      got.push(p.payload!.length > 100 ? `large ${p.payload!.length}` : p.payload!.toString());
      sub.send(ack(TYPE.PUBACK, p.id!));
    }
    expect(got).toEqual([...burst.map((_, i) => `m${i + 1}`), 'large 200000']);
  });

  it('handles a DISCONNECT at the end of a burst before the connection closes: no last will', async () => {
    const b = await brokers.start({ readBatchPackets: 2 });
    const sub = await client(b.port, 'sub');
    sub.send(subscribe(1, [['pos/replies/hq/#', 0]]));
    await sub.next(TYPE.SUBACK);
    const pub = await client(b.port, 'pub', { topic: 'pos/replies/hq/will', payload: 'gone' });
    const burst: Buffer[] = [];
    for (let i = 1; i <= 50; i += 1) burst.push(publish({ topic: 'pos/replies/hq/r', payload: `m${i}` }));
    pub.send(...burst, disconnect());
    pub.socket.end();
    await pub.waitClosed();
    for (let i = 1; i <= 50; i += 1) expect((await sub.next(TYPE.PUBLISH)).payload?.toString()).toBe(`m${i}`);
    // A PINGRESP proves the broker has handled everything sent before it; no will came first.
    sub.send(pingreq());
    await sub.next(TYPE.PINGRESP);
    expect(sub.pending(TYPE.PUBLISH)).toEqual([]);
  });
});
