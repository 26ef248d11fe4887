/**
 * nats-server tuned for large stores as docs/topology.md ("nats-server at scale") describes and
 * the bench runs it: `$MQTT_msgs` created before any MQTT client with limits retention (max age,
 * in memory) and `mqtt.consumer_memory_storage`. The gateway must keep that stream as it is, and
 * the device's contract must hold on it: a script sent while the register is away (clean
 * DISCONNECT, persistent session kept) arrives when it connects again, and runs once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { skipWithout } from '../support/binaries.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { type RunningProgramBroker, startNatsServer } from '../support/broker-programs.ts';
import { TestClient } from '../support/mqtt.ts';
import { createMqttMessageStream, jetStreamRequest } from '../support/nats-api.ts';
import { cleanupsAfterEach } from '../support/suite-hooks.ts';

describe.skipIf(skipWithout(['nats-server'], 'nats-server tuned for large stores'))(
  'nats-server tuned for large stores',
  () => {
    const ns = 'tuned';
    let nats: RunningProgramBroker;
    const cleanups = cleanupsAfterEach();

    beforeAll(async () => {
      nats = await startNatsServer({ mqtt: ['consumer_memory_storage: true'] });
      await createMqttMessageStream(nats.natsPort!, { maxAgeSeconds: 3600, storage: 'memory' });
    });
    afterAll(async () => {
      await nats?.stop();
    });

    it('keeps the limits-retention stream and delivers a script sent while the register was away', async () => {
      const deviceId = uniqueId('away');
      const first = directBridge({ url: nats.url, ns, deviceId });
      try {
        await first.bridge.start();
      } finally {
        await first.stop();
      }

      const controller = await TestClient.connect(nats.url, [topics.deviceReply(ns, deviceId, 'away-1')]);
      cleanups.push(() => controller.close());
      // QoS 1 and acknowledged by nats-server: stored for the register's durable consumer.
      await controller.publish(
        topics.deviceScripts(ns, deviceId),
        JSON.stringify({ script: 'PRINT away', requestId: 'away-1' }),
      );

      const again = directBridge({ url: nats.url, ns, deviceId });
      cleanups.push(() => again.stop());
      await again.bridge.start();
      const reply = await controller.waitFor((m) => m.topic.endsWith('/replies/away-1'), 'the reply');
      expect((reply.json as { error?: string }).error).toBeUndefined();
      expect(again.queue.list().map((t) => t.requestId)).toEqual(['away-1']);

      // The MQTT gateway used the stream created beforehand, not one of its own.
      const info = await jetStreamRequest(nats.natsPort!, '$JS.API.STREAM.INFO.$MQTT_msgs', {});
      const config = info.config as { retention?: string; storage?: string } | undefined;
      expect(config?.retention).toBe('limits');
      expect(config?.storage).toBe('memory');
    });
  },
);
