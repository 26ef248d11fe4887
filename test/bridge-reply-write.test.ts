/**
 * A reply leaves in the same socket write as the PUBACK of the script it answers, right after it
 * (bridge/mqtt-link.ts): one write and one broker read per script fewer than a reply sent on the
 * next turn (docs/benchmarks.md, "Fourth pass (register hosts)"), and still after the PUBACK, so a
 * broker that closes the connection over the reply cannot redeliver the script (docs/mqtt.md).
 * The device's real socket to the store broker is observed: what each of its writes carried.
 */
import type { Socket } from 'node:net';
import type { MqttClient } from 'mqtt';
import mqttPacket, { type Packet } from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { topics } from '../bridge/contract/topics.ts';
import { startTestDevice, uniqueId } from './support/bridge-device.ts';
import { brokersByName, type RunningBroker } from './support/brokers.ts';
import { TestClient } from './support/mqtt.ts';
import { brokerPerSuite } from './support/suite-hooks.ts';

/** The packets of each write the socket makes (one `_write` or one corked `_writev`). */
function recordWrites(socket: Socket): Packet[][] {
  const writes: Packet[][] = [];
  const packetsOf = (data: Buffer): Packet[] => {
    const packets: Packet[] = [];
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    parser.on('packet', (packet: Packet) => packets.push(packet));
    parser.parse(data);
    return packets;
  };
  const target = socket as unknown as {
    _write: (chunk: Buffer, encoding: string, cb: () => void) => void;
    _writev: (chunks: Array<{ chunk: Buffer }>, cb: () => void) => void;
  };
  const write = target._write.bind(socket);
  const writev = target._writev.bind(socket);
  target._write = (chunk, encoding, cb) => {
    writes.push(packetsOf(Buffer.from(chunk)));
    write(chunk, encoding, cb);
  };
  target._writev = (chunks, cb) => {
    writes.push(packetsOf(Buffer.concat(chunks.map((c) => Buffer.from(c.chunk)))));
    writev(chunks, cb);
  };
  return writes;
}

describe('replies on the store broker', () => {
  const ns = 'reply/store-3';
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(brokersByName.embedded, ns, (started) => {
    broker = started;
  });

  it('leave in the same write as the PUBACK of their script, after it', async () => {
    const deviceId = uniqueId('reply');
    const reply = `${ns}/devices/${deviceId}/replies/+`;
    const isReply = (topic: string | undefined) => topic?.startsWith(reply.slice(0, -1)) === true;
    const controller = await TestClient.connect(broker.controllerUrl, [reply], broker.controllerCreds);
    cleanups.push(() => controller.close());
    const d = await startTestDevice(broker, { ns, deviceId });
    cleanups.push(() => d.stop());
    const client = (d.device.bridge as unknown as { client: MqttClient }).client;
    const writes = recordWrites(client.stream as Socket);

    for (const requestId of ['a', 'b']) {
      await controller.publish(
        topics.deviceScripts(ns, deviceId),
        JSON.stringify({ script: 'PRINT ok', requestId }),
      );
    }
    await controller.waitForCount((m) => isReply(m.topic), 2, 'two replies');

    const replies = writes.filter((w) => w.some((p) => p.cmd === 'publish' && isReply(p.topic)));
    expect(replies).toHaveLength(2);
    for (const write of replies) {
      const puback = write.findIndex((p) => p.cmd === 'puback');
      const answer = write.findIndex((p) => p.cmd === 'publish' && isReply(p.topic));
      expect(puback).toBeGreaterThanOrEqual(0);
      expect(answer).toBeGreaterThan(puback);
    }
  });
});
