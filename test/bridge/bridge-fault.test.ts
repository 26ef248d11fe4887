/**
 * The bridge when the broker goes away (docs/mqtt.md, "after a reconnect the device
 * republishes its state and the status of every task it holds"): nothing published while
 * disconnected is lost, superseded statuses are not queued, evictions are still cleared, no
 * task runs twice, and a broker that drops the connection over a refused reply causes no loop.
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { skipSuite } from '../support/binaries.ts';
import { directBridge, startTestDevice, uniqueId } from '../support/bridge-device.ts';
import { type BrokerFixture, brokersByName, type RunningBroker } from '../support/brokers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { brokerPerSuite, cleanupsAfterEach } from '../support/suite-hooks.ts';
import { until } from '../support/waits.ts';

const json = (m: Received) => m.json as Record<string, unknown> | undefined;

/** The brokers with halt()/resume(); the Redis pair is covered by the contract suite. */
const restartable = [brokersByName.embedded, brokersByName.mosquitto, brokersByName.nats];

describe.each(restartable)('MQTT faults on $name', (fixture: BrokerFixture) => {
  if (skipSuite(fixture.binaries, `MQTT faults on ${fixture.name}`)) return;
  const ns = 'fault/store-7';
  let broker: RunningBroker;
  const cleanups = brokerPerSuite(fixture, ns, (started) => {
    broker = started;
  });

  async function watcher(filters: string[]): Promise<TestClient> {
    const client = await TestClient.connect(broker.controllerUrl, filters, broker.controllerCreds);
    cleanups.push(() => client.close());
    return client;
  }
  const finished = (deviceId: string, id: number) => (m: Received) =>
    m.topic === topics.taskStatus(ns, deviceId, id) && json(m)?.status === 'FINISHED';

  it('delivers every status after the broker was down while tasks ran, and runs no task twice', async () => {
    const deviceId = uniqueId('down');
    const d = await startTestDevice(broker, { ns, deviceId });
    cleanups.push(() => d.stop());
    const starts = new Map<number, number>();
    d.device.queue.on('started', (task) => starts.set(task.id, (starts.get(task.id) ?? 0) + 1));
    const live = await watcher([topics.deviceTaskStatuses(ns, deviceId)]);

    const ids: number[] = [];
    for (const n of [1, 2, 3]) ids.push((await d.submit(`SLEEP 250\nPRINT ${n}`)).id);
    await live.waitFor(
      (m) => json(m)?.id === ids[0] && json(m)?.startedAt !== undefined,
      'first task started',
    );
    await broker.halt!();
    await until(() => d.device.bridge!.health().state !== 'connected', 'the bridge to notice');
    ids.push((await d.submit('PRINT while the broker is down')).id);
    for (const id of ids) expect((await d.task(id, 10_000)).status).toBe('FINISHED');
    const health = d.device.bridge!.health();
    expect(health.state).toBe('reconnecting');
    expect(health.pending).toBeGreaterThanOrEqual(1);

    await broker.resume!();
    for (const id of ids)
      await live.waitFor(finished(deviceId, id), `FINISHED of ${id} after the restart`, 15_000);
    const fresh = await watcher([topics.deviceTaskStatuses(ns, deviceId)]);
    const retained = await fresh.waitForCount(
      (m) => m.retain && json(m)?.status === 'FINISHED',
      4,
      'retained',
    );
    expect(new Set(retained.map((m) => json(m)?.id))).toEqual(new Set(ids));
    expect([...starts.values()]).toEqual([1, 1, 1, 1]);
    expect(d.device.queue.list()).toHaveLength(4);
    await until(() => d.device.bridge!.health().pending === 0, 'nothing pending');
  });

  it('clears, after reconnecting, the topic of a task evicted while disconnected', async () => {
    const deviceId = uniqueId('evict');
    const device = directBridge(
      // A reconnect period long enough for the test to act while the bridge is disconnected:
      // fixed (reconnectMaxMs 0), not the backoff's first wait, which may be half of it.
      {
        url: broker.url,
        ...broker.deviceCreds(deviceId),
        ns,
        deviceId,
        reconnectPeriodMs: 1500,
        reconnectMaxMs: 0,
      },
      { retain: 1 },
    );
    cleanups.push(() => device.stop());
    const { bridge, queue } = device;
    const live = await watcher([topics.deviceTaskStatuses(ns, deviceId), topics.state(ns, deviceId)]);
    await bridge.start();
    const a = queue.submit('PRINT a', { source: 'rest' }).task;
    await live.waitFor(finished(deviceId, a.id), 'a finished');
    await until(() => bridge.health().pending === 0, 'every status of a acknowledged');

    bridge.simulateConnectionLoss();
    await live.waitFor((m) => json(m)?.online === false, 'last will');
    await until(() => bridge.health().state !== 'connected', 'the bridge to notice');
    const b = queue.submit('PRINT b', { source: 'rest' }).task;
    await queue.waitForEnd(b.id, 5000);
    const c = queue.submit('PRINT c', { source: 'rest' }).task;
    await queue.waitForEnd(c.id, 5000);
    // a and b are evicted; b never reached the broker: only a's clear and c's status wait.
    expect(queue.get(a.id)).toBeUndefined();
    expect(bridge.health().pending).toBe(2);

    await live.waitFor(
      (m) => m.topic === topics.taskStatus(ns, deviceId, a.id) && m.payload.length === 0,
      'clear of a',
    );
    await live.waitFor(finished(deviceId, c.id), 'c after the reconnect');
    expect(live.messages.some((m) => m.topic === topics.taskStatus(ns, deviceId, b.id))).toBe(false);
    const barrierTopic = `${ns}/replies/${uniqueId('barrier')}`;
    const fresh = await watcher([topics.deviceTaskStatuses(ns, deviceId), barrierTopic]);
    await fresh.waitFor((m) => m.retain, 'retained status of c');
    await fresh.barrier(barrierTopic);
    expect(fresh.messages.filter((m) => m.retain).map((m) => json(m)?.id)).toEqual([c.id]);
  });
});

describe('a broker that closes the connection over a refused reply', () => {
  // aedes closes a 3.1.1 connection when authorizePublish fails: the way a strict ACL says no.
  let aedes: Aedes;
  let server: net.Server;
  let url: string;
  const cleanups = cleanupsAfterEach();

  beforeAll(async () => {
    aedes = await Aedes.createBroker({
      authorizePublish: (_client, packet, callback) =>
        callback(packet.topic.endsWith('/replies/kick-1') ? new Error('not allowed') : null),
    });
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is disconnected once, not in a loop, and answers the next request', async () => {
    const ns = 'acl';
    const deviceId = uniqueId('kick');
    const device = directBridge({ url, ns, deviceId, reconnectPeriodMs: 1500 });
    const { bridge, queue, registry } = device;
    const ok = topics.deviceReply(ns, deviceId, 'ok-1');
    const live = await TestClient.connect(url, [topics.state(ns, deviceId), ok]);
    cleanups.push(async () => {
      await live.close();
      await device.stop();
    });
    await bridge.start();
    const body = { script: 'PRINT a', requestId: 'kick-1' };
    await live.publish(topics.deviceScripts(ns, deviceId), JSON.stringify(body));
    const kicked = await live.waitFor((m) => json(m)?.online === false, 'disconnected over the reply');
    const after = live.messages.indexOf(kicked);
    await live.waitFor((m) => json(m)?.online === true && live.messages.indexOf(m) > after, 'online again');
    await live.publish(
      topics.deviceScripts(ns, deviceId),
      JSON.stringify({ script: 'PRINT b', requestId: 'ok-1' }),
    );
    await live.waitFor((m) => m.topic === ok, 'answer to the next request');
    // The script was acknowledged before the reply went out, so the broker did not deliver it
    // again (no duplicate), and the refused reply was not resent: one disconnect only.
    expect(live.messages.filter((m) => json(m)?.online === false)).toHaveLength(1);
    const metrics = await registry.getSingleMetric('regbridge_mqtt_messages_in_total')!.get();
    expect(metrics.values.find((v) => v.labels.result === 'duplicate')).toBeUndefined();
    expect(queue.list().map((t) => t.requestId)).toEqual(['ok-1', 'kick-1']);
  });
});
