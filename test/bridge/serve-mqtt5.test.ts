/**
 * `serve --mqtt-protocol 5` against a real MQTT 5 broker (a mosquitto the test starts): the device
 * answers the MQTT 5 response topic with the correlation data, and refuses a retained script even
 * when it is delivered live, thanks to Retain As Published (docs/mqtt.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { skipSuite } from '../support/binaries.ts';
import { startTestDevice, type TestDevice, uniqueId } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { jsonOf, TestClient } from '../support/mqtt.ts';

const ns = 'v5serve';
let broker: RunningBroker;
let device: TestDevice;
let live: TestClient;

describe('serve --mqtt-protocol 5', () => {
  if (skipSuite(['mosquitto'], 'serve --mqtt-protocol 5 on mosquitto')) return;
  beforeAll(async () => {
    broker = await brokersByName.mosquitto.start(ns);
    device = await startTestDevice(broker, { ns, deviceId: uniqueId('v5'), mqttProtocol: '5' });
    live = await TestClient.connect(broker.controllerUrl, [`${ns}/replies/#`, `${ns}/devices/+/replies/+`], {
      ...broker.controllerCreds,
      protocolVersion: 5,
    });
  });

  afterAll(async () => {
    await live?.close();
    await device?.device.stop();
    await broker?.stop();
  });

  it('ignores the response topic: answers on its own reply topic, without correlation data (contract 3.1)', async () => {
    await live.publish(
      topics.deviceScripts(ns, device.deviceId),
      JSON.stringify({ script: 'PRINT five', requestId: 'v5-a' }),
      { properties: { responseTopic: `${ns}/replies/rt`, correlationData: Buffer.from('corr-7') } },
    );
    const own = topics.deviceReply(ns, device.deviceId, 'v5-a');
    const answer = await live.waitFor((m) => m.topic === own, 'the reply');
    expect(jsonOf(answer)).toEqual({
      requestId: 'v5-a',
      deviceId: device.deviceId,
      id: expect.any(Number),
      status: 'RUNNING',
    });
    expect(answer.packet.properties?.correlationData).toBeUndefined();
    expect(live.messages.filter((m) => m.topic === `${ns}/replies/rt`)).toEqual([]);
  });

  it('refuses a retained script delivered live (Retain As Published), creating no task', async () => {
    const scripts = topics.deviceScripts(ns, device.deviceId);
    const before = device.device.queue.list().length;
    await live.publish(scripts, JSON.stringify({ script: 'PRINT stale', requestId: 'v5-r' }), {
      retain: true,
    });
    try {
      const refusal = await live.waitFor((m) => m.topic.endsWith('/replies/v5-r'), 'refusal');
      expect(jsonOf(refusal)).toEqual({
        requestId: 'v5-r',
        deviceId: device.deviceId,
        error: expect.stringMatching(/^RETAINED_SUBMISSION/),
      });
      expect(device.device.queue.list()).toHaveLength(before);
    } finally {
      await live.publish(scripts, '', { retain: true });
    }
  });
});
