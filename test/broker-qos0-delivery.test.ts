/**
 * broker/qos0-delivery.ts on a stream of its own: a QoS 0 delivery is written when aedes hands it
 * over (not from an immediate a turn later), the writes of a turn leave in one flush that runs
 * behind the turn's last PUBACK write callback, a socket holding FLUSH_BYTES leaves at once, and
 * aedes' checks and errors are kept (a duplicate is not written; a closed client errors). The
 * suites with a real broker (broker-write-coalescing, broker-sessions, the conformance suites)
 * cover it end to end.
 */
import { Writable } from 'node:stream';
import type { AedesPublishPacket, Client } from 'aedes';
import { describe, expect, it } from 'vitest';
import { DeliveryFlush, FLUSH_BYTES, writeQoS0AtOnce } from '../broker/qos0-delivery.ts';

type Deliver = (packet: AedesPublishPacket, callback: () => void) => void;

/** A socket stand-in: records each write that leaves it (one `_writev` per flush). */
class Sink extends Writable {
  readonly flushes: number[] = [];
  readonly events: string[];

  constructor(events: string[]) {
    super({ highWaterMark: 16_384 });
    this.events = events;
  }

  override _write(_chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.flushes.push(1);
    this.events.push('flush 1');
    callback();
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: () => void): void {
    this.flushes.push(chunks.length);
    this.events.push(`flush ${chunks.length}`);
    callback();
  }
}

function fakeClient(events: string[], connected = true) {
  const conn = new Sink(events);
  const errors: Error[] = [];
  const client = {
    id: 'ctl',
    conn,
    duplicates: {} as Record<string, number>,
    broker: { authorizeForward: (_c: unknown, p: AedesPublishPacket) => p },
    connecting: false,
    connected,
    errored: false,
    _onError: (error: Error | null) => {
      if (error) errors.push(error);
    },
    waitForDrain: (callback: (e: Error | null) => void) => conn.once('drain', () => callback(null)),
    deliver0: (() => undefined) as Deliver,
  };
  const flush = new DeliveryFlush();
  writeQoS0AtOnce(client as unknown as Client, flush);
  return { client, conn, errors, flush };
}

function message(counter: number, payload = `m${counter}`): AedesPublishPacket {
  return {
    cmd: 'publish',
    topic: 'pos/devices/reg-1/tasks/1/status',
    payload: Buffer.from(payload),
    qos: 1,
    retain: true,
    dup: false,
    brokerId: 'b1',
    brokerCounter: counter,
  } as AedesPublishPacket;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('QoS 0 deliveries written at once', () => {
  it('writes when handed over and flushes once, behind the PUBACK callbacks queued before it', async () => {
    const events: string[] = [];
    const { client, conn, flush } = fakeClient(events);
    let called = 0;
    for (let i = 1; i <= 3; i += 1) client.deliver0(message(i), () => (called += 1));
    // Written (buffered in the corked socket), not yet sent, no callback yet.
    expect(conn.writableLength).toBeGreaterThan(0);
    expect(conn.flushes).toEqual([]);
    // aedes queues a PUBACK's write callback, then the broker sees the PUBLISH it read.
    setImmediate(() => events.push('puback callback'));
    flush.publishRead();
    await nextTurn();
    await nextTurn();
    expect(events).toEqual(['puback callback', expect.stringMatching(/^flush \d+$/)]);
    expect(conn.flushes).toHaveLength(1); // every packet of the three in one write
    expect(called).toBe(3);
  });

  it('writes each message once, at QoS 0, and still calls back for the duplicate', async () => {
    const events: string[] = [];
    const { client, conn } = fakeClient(events);
    const written: Buffer[] = [];
    conn._writev = (chunks, callback) => {
      for (const c of chunks) written.push(c.chunk as Buffer);
      callback();
    };
    let called = 0;
    client.deliver0(message(7), () => (called += 1));
    client.deliver0(message(7), () => (called += 1)); // the same message through an overlapping filter
    await nextTurn();
    await nextTurn();
    expect(called).toBe(2);
    const bytes = Buffer.concat(written);
    expect(bytes[0]).toBe(0x31); // PUBLISH, QoS 0, retain as published
    expect(bytes.toString().split('m7').length - 1).toBe(1);
  });

  it('sends a socket holding FLUSH_BYTES at once, within the turn', async () => {
    const { client, conn } = fakeClient([]);
    const big = 'x'.repeat(1024);
    for (let i = 1; i <= Math.ceil(FLUSH_BYTES / 1024) + 1; i += 1)
      client.deliver0(message(i, big), () => undefined);
    await new Promise<void>((resolve) => process.nextTick(resolve)); // mqtt-packet's own cork
    expect(conn.flushes.length).toBeGreaterThan(0);
  });

  it('errors a client whose connection is closed, and calls back', async () => {
    const { client, conn, errors } = fakeClient([], false);
    let called = 0;
    client.deliver0(message(1), () => (called += 1));
    await nextTurn();
    await nextTurn();
    expect(called).toBe(1);
    expect(errors.map((e) => e.message)).toEqual(['connection closed']);
    expect(conn.flushes).toEqual([]);
  });
});
