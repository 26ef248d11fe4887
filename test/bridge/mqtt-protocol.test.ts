/**
 * Issue 10 item 11 (docs/mqtt.md, "MQTT 5 or 3.1.1"): with `--mqtt-protocol auto` (the default)
 * a device speaks MQTT 5 where the broker accepts it, so a retained script delivered live is
 * refused there, and falls back to 3.1.1 where the broker closes the connection on a level-5
 * CONNECT (the store broker, aedes) or answers CONNACK 0x01 (a proxy in front of mosquitto that
 * refuses level 5). `3.1.1` and `5` force one.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { startTestDevice, type TestDevice, uniqueId } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { jsonOf, TestClient } from '../support/mqtt.ts';

const ns = 'proto';
const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
});

async function device(broker: RunningBroker, mqttProtocol: string, url?: string): Promise<TestDevice> {
  const d = await startTestDevice(broker, {
    ns,
    deviceId: uniqueId('proto'),
    mqttProtocol,
    ...(url && { mqttUrl: url }),
  });
  stops.push(() => d.stop());
  return d;
}

async function controller(broker: RunningBroker, filters: string[]): Promise<TestClient> {
  const client = await TestClient.connect(broker.controllerUrl, filters, broker.controllerCreds);
  stops.push(() => client.close());
  return client;
}

/** A script published to `d` is accepted (the device is connected and subscribed). */
async function runsScripts(broker: RunningBroker, d: TestDevice): Promise<void> {
  const requestId = uniqueId('r');
  const reply = topics.deviceReply(ns, d.deviceId, requestId);
  const live = await controller(broker, [reply]);
  await live.publish(topics.deviceScripts(ns, d.deviceId), JSON.stringify({ script: 'PRINT hi', requestId }));
  expect(jsonOf(await live.waitFor((m) => m.topic === reply, 'reply'))).toMatchObject({ status: 'RUNNING' });
}

describe('on mosquitto (speaks MQTT 5)', () => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await brokersByName.mosquitto.start(ns);
    stops.push(() => broker.stop());
  });

  it('auto connects with MQTT 5 and refuses a live retained script', async () => {
    const d = await device(broker, 'auto');
    expect(d.device.bridge!.health()).toMatchObject({ state: 'connected', protocol: '5' });
    const health = (await (await fetch(`${d.baseUrl}/health`)).json()) as { mqtt: unknown };
    expect(health.mqtt).toMatchObject({ state: 'connected', protocol: '5' });
    const reply = topics.deviceReply(ns, d.deviceId, 'ret');
    const live = await controller(broker, [reply]);
    const scripts = topics.deviceScripts(ns, d.deviceId);
    stops.push(() => live.publish(scripts, '', { retain: true }));
    await live.publish(scripts, JSON.stringify({ script: 'PRINT stale', requestId: 'ret' }), {
      retain: true,
    });
    const refusal = jsonOf(await live.waitFor((m) => m.topic === reply, 'refusal'));
    expect(refusal).toEqual({
      requestId: 'ret',
      deviceId: d.deviceId,
      error: expect.stringMatching(/^RETAINED_SUBMISSION/),
    });
    expect(d.device.queue.list()).toHaveLength(0);
  });

  it('3.1.1 (and its old name 4) forces MQTT 3.1.1', async () => {
    for (const mode of ['3.1.1', '4']) {
      const d = await device(broker, mode);
      expect(d.device.bridge!.health()).toMatchObject({ state: 'connected', protocol: '3.1.1' });
    }
  });

  it('auto falls back to 3.1.1 when the broker answers a level-5 CONNECT with CONNACK 0x01', async () => {
    const proxy = await refusingProxy(Number(new URL(broker.url).port));
    stops.push(() => new Promise((resolve) => proxy.server.close(resolve)));
    const d = await device(broker, 'auto', `mqtt://127.0.0.1:${proxy.port}`);
    expect(proxy.refusedLevel5).toBeGreaterThanOrEqual(1);
    expect(d.device.bridge!.health()).toMatchObject({ state: 'connected', protocol: '3.1.1' });
    await runsScripts(broker, d);
  });
});

describe('on the store broker (aedes: MQTT 3.1.1 only)', () => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await brokersByName.embedded.start(ns);
    stops.push(() => broker.stop());
  });

  it('auto falls back to 3.1.1 and works', async () => {
    const d = await device(broker, 'auto');
    expect(d.device.bridge!.health()).toMatchObject({ state: 'connected', protocol: '3.1.1' });
    await runsScripts(broker, d);
  });
});

/** The MQTT protocol level of a CONNECT packet in `data`, if it is all there. */
function protocolLevel(data: Buffer): number | undefined {
  let i = 1;
  while (i < data.length && (data[i]! & 0x80) !== 0) i += 1; // remaining length (varint)
  const nameLength = data.readUInt16BE(i + 1);
  return data[i + 3 + nameLength];
}

/**
 * A TCP proxy to `port` that answers a level-5 CONNECT the way a 3.1.1-only broker may: CONNACK
 * with return code 1 ("unacceptable protocol version"), then closes; other CONNECTs pass through.
 */
async function refusingProxy(
  port: number,
): Promise<{ server: Server; port: number; readonly refusedLevel5: number }> {
  let refused = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.once('data', (first: Buffer) => {
      if (protocolLevel(first) === 5) {
        refused += 1;
        socket.end(Buffer.from([0x20, 0x02, 0x00, 0x01]));
        return;
      }
      const upstream = tcpConnect(port, '127.0.0.1');
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
      upstream.write(first);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
  });
  server.on('close', () => {
    for (const socket of sockets) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as { port: number }).port,
    get refusedLevel5() {
      return refused;
    },
  };
}
