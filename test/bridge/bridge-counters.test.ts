/**
 * The bridge's message counters (bridge/bridge-metrics.ts): the right series count each message,
 * also when several bridges share one registry (the bench's register hosts do).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { directBridge, uniqueId } from '../support/bridge-device.ts';
import { brokersByName, type RunningBroker } from '../support/brokers.ts';
import { TestClient } from '../support/mqtt.ts';
import { brokerPerSuite } from '../support/suite-hooks.ts';
import { until } from '../support/waits.ts';

describe('bridge counters on the store broker', () => {
  const ns = 'count/store-5';
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(brokersByName.embedded, ns, (started) => {
    broker = started;
  });

  it('count every script, status and reply of two bridges sharing a registry', async () => {
    const registry = new Registry();
    const reply = `${ns}/devices/+/replies/+`;
    const ids = [uniqueId('count'), uniqueId('count')];
    const controller = await TestClient.connect(
      broker.controllerUrl,
      [reply, ...ids.map((id) => topics.deviceTaskStatuses(ns, id))],
      broker.controllerCreds,
    );
    cleanups.push(() => controller.close());
    for (const deviceId of ids) {
      const d = directBridge({ url: broker.url, ...broker.deviceCreds(deviceId), ns, deviceId, registry });
      cleanups.push(() => d.stop());
      await d.bridge.start();
    }
    const value = async (name: string, labels: Record<string, string>): Promise<number | undefined> => {
      const metric = await registry.getSingleMetric(name)!.get();
      const series = metric.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
      return series?.value;
    };
    const statusesBefore = (await value('regbridge_mqtt_messages_out_total', { kind: 'status' })) ?? 0;

    for (const deviceId of ids) {
      for (const n of [1, 2]) {
        const body = { script: `PRINT ${n}`, requestId: `${deviceId}-${n}` };
        await controller.publish(topics.deviceScripts(ns, deviceId), JSON.stringify(body));
      }
    }
    await controller.waitForCount((m) => m.topic.includes('/replies/'), 4, 'four replies');
    await controller.waitForCount((m) => (m.json as { status?: string })?.status === 'FINISHED', 4, 'ends');
    const statuses = async () =>
      ((await value('regbridge_mqtt_messages_out_total', { kind: 'status' })) ?? 0) - statusesBefore;
    await until(async () => (await statuses()) === 12, 'three statuses per task counted');

    expect(await value('regbridge_mqtt_messages_in_total', { kind: 'script', result: 'accepted' })).toBe(4);
    expect(await value('regbridge_mqtt_messages_out_total', { kind: 'reply' })).toBe(4);
    expect(await value('regbridge_mqtt_messages_out_total', { kind: 'state' })).toBeGreaterThanOrEqual(2);
    const text = await registry.metrics();
    expect(text).toContain('regbridge_mqtt_messages_in_total{kind="script",result="accepted"} 4');
    expect(text).toContain('regbridge_mqtt_messages_out_total{kind="reply"} 4');
  });
});
