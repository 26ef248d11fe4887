/**
 * A broker that refuses for a while, as a clustered one does while it re-elects leaders after a
 * node loss (docs/mqtt.md, "Several brokers"; docs/topology.md): an aedes broker whose
 * authorizeSubscribe refuses (SUBACK 0x80) the first SUBSCRIBEs of every filter, and whose
 * persistence drops the first retained states of a device while acknowledging them (nats-server
 * 2.9 acknowledges a retained PUBLISH it failed to store). The device and the controller retry
 * with backoff; the controller's start() gives up after its connect time-out, naming the filter.
 */
import net from 'node:net';
import { Aedes, type AedesPublishPacket } from 'aedes';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backoffDelay } from '../../bridge/contract/subscribe-retry.ts';
import { topics } from '../../bridge/contract/topics.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { type DirectBridge, directBridge, uniqueId } from '../support/bridge-device.ts';
import { TestClient } from '../support/mqtt.ts';
import { until } from '../support/waits.ts';

const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const NS = 'refusals/store-1';

describe('a broker that refuses SUBSCRIBEs and drops retained states for a while', () => {
  let aedes: Aedes;
  let server: net.Server;
  let url: string;
  /** Client id prefix -> how many SUBSCRIBEs of each filter to refuse. */
  const refuseFirst = new Map<string, number>();
  /** `${clientId} ${filter}` -> SUBSCRIBEs seen (refused and granted). */
  const subscribes = new Map<string, number>();
  /** Device id -> how many of its retained states to drop (acknowledged, not stored). */
  const dropStates = new Map<string, number>();
  /** Device id -> retained states dropped, and stored. */
  const states = new Map<string, { dropped: number; stored: number }>();
  /** Device ids whose retained end statuses are dropped (acknowledged, not stored), and how many were. */
  const dropEnded = new Map<string, number>();
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    aedes = await Aedes.createBroker({
      authorizeSubscribe: (client, subscription, callback) => {
        const key = `${client?.id} ${subscription.topic}`;
        const seen = (subscribes.get(key) ?? 0) + 1;
        subscribes.set(key, seen);
        const limit = [...refuseFirst].find(([prefix]) => client?.id.startsWith(prefix))?.[1] ?? 0;
        callback(null, seen <= limit ? null : subscription);
      },
    });
    const persistence = (
      aedes as unknown as { persistence: { storeRetained(p: AedesPublishPacket): Promise<void> } }
    ).persistence;
    const store = persistence.storeRetained.bind(persistence);
    persistence.storeRetained = async (packet) => {
      const ended = packet.topic.match(/\/devices\/([^/]+)\/tasks\/\d+\/status$/)?.[1];
      if (
        ended !== undefined &&
        (dropEnded.get(ended) ?? 0) > 0 &&
        /"status":"(FINISHED|FAILURE)"/.test(packet.payload.toString())
      ) {
        dropEnded.set(ended, (dropEnded.get(ended) ?? 0) - 1);
        return;
      }
      const device = packet.topic.match(/\/devices\/([^/]+)\/state$/)?.[1];
      if (device !== undefined && packet.payload.length > 0) {
        const count = states.get(device) ?? { dropped: 0, stored: 0 };
        states.set(device, count);
        if (count.dropped < (dropStates.get(device) ?? 0)) {
          count.dropped += 1;
          return;
        }
        count.stored += 1;
      }
      await store(packet);
    };
    server = net.createServer(aedes.handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function device(deviceId: string, auditRetained?: boolean): Promise<DirectBridge> {
    const d = directBridge({
      url,
      ns: NS,
      deviceId,
      protocolVersion: 4,
      startTimeoutMs: 10_000,
      ...(auditRetained !== undefined && { auditRetained }),
    });
    cleanups.push(() => d.stop());
    await d.bridge.start();
    return d;
  }

  function controller(connectTimeoutMs = 10_000): StoreController {
    const c = new StoreController({
      url,
      ns: NS,
      clientId: uniqueId('ctl'),
      logger: silent,
      settleMs: 150,
      connectTimeoutMs,
    });
    cleanups.push(() => c.stop());
    return c;
  }

  it('backs off: 250 ms doubling to 4 s', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((attempt) => backoffDelay(attempt))).toEqual([
      250, 500, 1000, 2000, 4000, 4000, 4000,
    ]);
  });

  it('a device whose SUBSCRIBEs are refused twice subscribes on the third attempt and takes scripts', async () => {
    const deviceId = uniqueId('reg');
    refuseFirst.set(`regbridge_${NS.replace(/\//g, '_')}_${deviceId}`, 2);
    const d = await device(deviceId);
    const clientId = `regbridge_${NS.replace(/\//g, '_')}_${deviceId}`;
    // start() resolved once every filter was granted: three SUBSCRIBEs of each.
    for (const filter of [topics.deviceScripts(NS, deviceId), topics.groupScripts(NS, 'all')]) {
      expect(subscribes.get(`${clientId} ${filter}`), filter).toBe(3);
    }
    const sender = await TestClient.connect(url, []);
    cleanups.push(() => sender.close());
    const finished = new Promise<void>((resolve) => d.queue.on('finished', () => resolve()));
    await sender.publish(
      topics.deviceScripts(NS, deviceId),
      JSON.stringify({ script: 'PRINT ok', requestId: 'r1' }),
    );
    await finished;
  });

  it('a controller whose SUBSCRIBEs are refused twice starts and sees the devices', async () => {
    const deviceId = uniqueId('reg');
    await device(deviceId);
    refuseFirst.set('ctl-', 2);
    try {
      const c = controller();
      await c.start();
      expect(c.device(deviceId)?.online).toBe(true);
      expect(subscribes.get(`${c.clientId} ${topics.allStates(NS)}`)).toBe(3);
      const [result] = await c.submit('PRINT after refusals', { to: [deviceId], deadlineMs: 10_000 });
      expect(result).toMatchObject({ deviceId, status: 'FINISHED', report: 'after refusals' });
    } finally {
      refuseFirst.delete('ctl-');
    }
  });

  it('a controller refused for longer than its connect time-out fails, naming the filter and the role', async () => {
    refuseFirst.set('ctl-', 1000);
    try {
      const c = controller(1200);
      const startedAt = Date.now();
      await expect(c.start()).rejects.toThrow(
        /refused the subscription to refusals\/store-1\/devices\/\+\/state.*controller role/,
      );
      // It retried (250 + 500 ms of backoff fit in 1.2 s) and gave up near the time-out.
      expect(subscribes.get(`${c.clientId} ${topics.allStates(NS)}`)).toBe(3);
      expect(Date.now() - startedAt).toBeLessThan(5000);
    } finally {
      refuseFirst.delete('ctl-');
    }
  });

  it('a running controller resubscribes after a reconnect, retrying refusals, and follows the statuses', async () => {
    const deviceId = uniqueId('reg');
    const d = await device(deviceId);
    const c = controller();
    await c.start();
    const allStates = `${c.clientId} ${topics.allStates(NS)}`;
    const before = subscribes.get(allStates) ?? 0;
    refuseFirst.set(c.clientId, before + 2);
    try {
      const reconnected = new Promise<void>((resolve) => c.once('connection', () => resolve()));
      // The broker drops the controller's connection: mqtt.js reconnects, the controller subscribes.
      for (const client of Object.values(
        (aedes as unknown as { clients: Record<string, { id: string; conn: net.Socket }> }).clients,
      )) {
        if (client.id === c.clientId) client.conn.destroy();
      }
      await reconnected;
      await until(
        () => (subscribes.get(allStates) ?? 0) === before + 3,
        'the third SUBSCRIBE after the reconnect',
      );
      const { task } = d.queue.submit('PRINT seen after the reconnect', { source: 'rest' });
      await until(
        () => c.tasks(deviceId).some((t) => t.id === task.id && t.status === 'FINISHED'),
        'the controller to see the task FINISHED',
      );
    } finally {
      refuseFirst.delete(c.clientId);
    }
  });

  it('a device whose retained state the broker acknowledged but did not store publishes it again', async () => {
    const deviceId = uniqueId('reg');
    dropStates.set(deviceId, 2);
    const d = await device(deviceId);
    await until(
      () => (states.get(deviceId)?.stored ?? 0) >= 1,
      'the state stored on the third publish',
      15_000,
    );
    expect(states.get(deviceId)?.dropped).toBe(2);
    const reader = await TestClient.connect(url, [topics.state(NS, deviceId)]);
    cleanups.push(() => reader.close());
    const state = await reader.waitFor(
      (m) => m.retain && m.topic === topics.state(NS, deviceId),
      'retained state',
    );
    expect(state.json).toMatchObject({ online: true, deviceId, bootId: d.bridge.bootId });
  });

  it('a device that audits its retained statuses publishes again an end status the broker did not store', async () => {
    const deviceId = uniqueId('reg');
    const d = await device(deviceId, true);
    dropEnded.set(deviceId, 2);
    const { task } = d.queue.submit('PRINT stored at last', { source: 'rest' });
    // Dropped twice (the FINISHED status, then its first republication), stored by the second audit.
    await until(() => dropEnded.get(deviceId) === 0, 'both end statuses dropped', 15_000);
    const reader = await TestClient.connect(url, []);
    cleanups.push(() => reader.close());
    const topic = topics.taskStatus(NS, deviceId, task.id);
    await until(
      async () => {
        reader.messages.length = 0;
        const seen = reader.waitFor((m) => m.retain && m.topic === topic, 'retained FINISHED', 500);
        await reader.client.subscribeAsync(topic, { qos: 0 });
        const ok = await seen.then(
          (m) => (m.json as { status?: string }).status === 'FINISHED',
          () => false,
        );
        await reader.client.unsubscribeAsync(topic);
        return ok;
      },
      'the retained FINISHED status stored after the audits',
      15_000,
      200,
    );
  });

  it('does not audit with one broker URL unless asked', async () => {
    const deviceId = uniqueId('reg');
    const d = await device(deviceId);
    const clientId = `regbridge_${NS.replace(/\//g, '_')}_${deviceId}`;
    const filter = topics.deviceTaskStatuses(NS, deviceId);
    const sweeps = subscribes.get(`${clientId} ${filter}`) ?? 0;
    const finished = new Promise<void>((resolve) => d.queue.on('finished', () => resolve()));
    d.queue.submit('PRINT no audit', { source: 'rest' });
    await finished;
    // Another task, and the stale-status sweep of the boot (one SUBSCRIBE) is all there is.
    const second = new Promise<void>((resolve) => d.queue.on('finished', () => resolve()));
    d.queue.submit('PRINT still no audit', { source: 'rest' });
    await second;
    expect(subscribes.get(`${clientId} ${filter}`) ?? 0).toBe(sweeps);
  });
});
