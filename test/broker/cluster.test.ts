/**
 * A store on a two-instance store broker (A and B over one private redis-server, docs/topology.md):
 * three devices (startDevice, REST + queue + bridge) given the broker list "A,B", so they start on
 * A; a StoreController and a subscriber on B. Fan-out, presence and last wills cross instances;
 * then A is stopped while tasks run and the devices move to B: every task's final status reaches
 * B, and no task runs twice. Skipped only when the redis-server binary is missing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../bridge/contract/topics.ts';
import { StoreBroker } from '../../broker/store-broker.ts';
import { type RunningDevice, startDevice } from '../../cli/device.ts';
import { parseServeConfig } from '../../cli/serve-config.ts';
import { StoreController } from '../../controller/store-controller.ts';
import { skipWithout } from '../support/binaries.ts';
import { silent } from '../support/loggers.ts';
import { type Received, TestClient } from '../support/mqtt.ts';
import { type RunningRedis, startRedisServer } from '../support/redis-server.ts';
import { until } from '../support/waits.ts';

const NS = 'stores/cluster';
const HQ = { username: 'hq', password: 'hq-secret' };
const DEVICE_IDS = ['reg-1', 'reg-2', 'reg-3'];
const password = (deviceId: string): string => `pw-${deviceId}`;

interface ClusterDevice {
  id: string;
  device: RunningDevice;
  /** Task id -> how many times the queue started it. */
  started: Map<number, number>;
  queued: number[];
}

function instance(redisUrl: string): StoreBroker {
  return new StoreBroker({
    port: 0,
    host: '127.0.0.1',
    ns: NS,
    users: [
      { name: HQ.username, password: HQ.password, role: 'controller' },
      ...DEVICE_IDS.map((id) => ({ name: id, password: password(id), role: 'device' as const })),
    ],
    redisUrl,
    logger: silent,
  });
}

function isStatus(message: Received, deviceId: string, taskId: number, status: string): boolean {
  const body = message.json as { status?: string } | undefined;
  return message.topic === topics.taskStatus(NS, deviceId, taskId) && body?.status === status;
}

// Skipped only outside CI when redis-server is missing; CI (.ci/run) installs it, so there it always runs.
describe.skipIf(skipWithout(['redis-server'], 'cluster over Redis'))(
  'a store on two broker instances over Redis',
  () => {
    let redis: RunningRedis;
    let a: StoreBroker;
    let b: StoreBroker;
    let urlA: string;
    let urlB: string;
    const devices: ClusterDevice[] = [];
    let controller: StoreController;
    /** A second controller given the list "A,B": it starts on A and must follow to B. */
    let follower: StoreController;
    let watcher: TestClient;

    const onA = (d: ClusterDevice): boolean =>
      d.device.bridge?.health().state === 'connected' && d.device.bridge.health().url === urlA;
    const onB = (d: ClusterDevice): boolean =>
      d.device.bridge?.health().state === 'connected' && d.device.bridge.health().url === urlB;

    beforeAll(async () => {
      redis = await startRedisServer();
      a = instance(redis.url);
      b = instance(redis.url);
      await a.start();
      await b.start();
      urlA = `mqtt://127.0.0.1:${a.port}`;
      urlB = `mqtt://127.0.0.1:${b.port}`;
      for (const id of DEVICE_IDS) {
        // Credentials in the first URL only: the second one uses them too.
        const mqttUrl = `mqtt://${id}:${password(id)}@127.0.0.1:${a.port},${urlB}`;
        const config = parseServeConfig({
          port: 0,
          host: '127.0.0.1',
          auth: 'off',
          deviceId: id,
          ns: NS,
          mqttUrl,
          logLevel: 'silent',
        });
        const device = await startDevice(config, { logger: silent });
        const entry: ClusterDevice = { id, device, started: new Map(), queued: [] };
        device.queue.on('started', (task) =>
          entry.started.set(task.id, (entry.started.get(task.id) ?? 0) + 1),
        );
        device.queue.on('queued', (task) => entry.queued.push(task.id));
        devices.push(entry);
      }
      watcher = await TestClient.connect(urlB, [topics.allStates(NS), topics.allTaskStatuses(NS)], HQ);
      controller = new StoreController({ url: urlB, ...HQ, ns: NS, logger: silent, settleMs: 150 });
      await controller.start();
      follower = new StoreController({ url: [urlA, urlB], ...HQ, ns: NS, logger: silent, settleMs: 150 });
      await follower.start();
    });

    afterAll(async () => {
      await controller?.stop();
      await follower?.stop();
      await watcher?.close();
      await Promise.allSettled(devices.map((d) => d.device.stop()));
      await Promise.allSettled([a?.stop(), b?.stop()]);
      await redis?.stop();
    });

    it('connects every device to the first broker of its list', () => {
      expect(devices.map((d) => d.device.bridge?.health())).toEqual(
        DEVICE_IDS.map(() => ({ state: 'connected', url: urlA, pending: 0, protocol: '3.1.1' })),
      );
    });

    it('shows the controller on B every online state retained through A', async () => {
      await until(() => controller.devices().filter((e) => e.online).length === 3, 'three devices online');
      expect(controller.devices().map((e) => [e.deviceId, e.online, e.bootId])).toEqual(
        devices.map((d) => [d.id, true, d.device.bridge?.bootId]),
      );
    });

    it('fans a script out from B to the devices on A; all FINISHED', async () => {
      const results = await controller.submit('PRINT hello from B', { to: 'all', deadlineMs: 10_000 });
      expect(results.map((r) => [r.deviceId, r.status])).toEqual(DEVICE_IDS.map((id) => [id, 'FINISHED']));
      expect(results.every((r) => r.status === 'FINISHED' && r.report === 'hello from B')).toBe(true);
    });

    it('shows B the last will of a device whose connection to A dropped; it comes back on B', async () => {
      const [d1] = devices as [ClusterDevice];
      const bootId = d1.device.bridge?.bootId;
      const isWill = (m: Received): boolean => {
        const body = m.json as { online?: boolean; bootId?: string } | undefined;
        return m.topic === topics.state(NS, d1.id) && body?.online === false && body.bootId === bootId;
      };
      const offline = watcher.waitFor(isWill, 'the last will of reg-1');
      d1.device.bridge?.simulateConnectionLoss();
      expect((await offline).json).toEqual({ online: false, deviceId: d1.id, bootId });
      // The next attempt goes to the next broker of the list.
      await until(() => onB(d1), 'reg-1 connected to B');
      await until(() => controller.device(d1.id)?.online === true, 'reg-1 online again');
      // And round the list: the attempt after that goes back to A (where the next test wants it).
      d1.device.bridge?.simulateConnectionLoss();
      await watcher.waitForCount(isWill, 2, 'the second last will of reg-1');
      await until(() => onA(d1), 'reg-1 connected to A again');
      await until(() => controller.device(d1.id)?.online === true, 'reg-1 online again');
    });

    it('moves the devices to B when A stops while tasks run: every status arrives, nothing runs twice', async () => {
      await until(() => devices.every(onA), 'every device on A');
      const before = devices.map((d) => d.started.size);
      const slow = controller.submit('SLEEP 1500\nPRINT slow', { to: 'all', deadlineMs: 20_000 });
      await until(
        () => devices.every((d, i) => d.started.size === (before[i] ?? 0) + 1),
        'the slow task running on every device',
      );
      const queuedBefore = devices.map((d) => d.queued.length);
      const after = controller.submit('PRINT after', { to: 'all', deadlineMs: 20_000 });
      await until(
        () => devices.every((d, i) => d.queued.length === (queuedBefore[i] ?? 0) + 1),
        'the second task queued behind it on every device',
      );

      await a.stop();
      // While the devices have no broker: one more task each over REST; its statuses wait for B.
      const offlineTasks = await Promise.all(
        devices.map(async (d) => {
          const response = await fetch(`http://127.0.0.1:${d.device.httpPort}/api/vendor-script`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ vendorScript: `PRINT while A was down (${d.id})` }),
          });
          expect(response.status).toBe(202);
          return ((await response.json()) as { id: number }).id;
        }),
      );

      const [slowResults, afterResults] = await Promise.all([slow, after]);
      expect(slowResults.map((r) => [r.deviceId, r.status, r.status === 'FINISHED' && r.report])).toEqual(
        DEVICE_IDS.map((id) => [id, 'FINISHED', 'slow']),
      );
      expect(afterResults.map((r) => [r.deviceId, r.status, r.status === 'FINISHED' && r.report])).toEqual(
        DEVICE_IDS.map((id) => [id, 'FINISHED', 'after']),
      );
      await until(() => devices.every(onB), 'every device connected to B');

      // Every task's final status reached the subscriber on B, the REST ones of the outage included.
      const taskIds = devices.map((_device, i) => {
        const ids = [slowResults[i], afterResults[i]].map((r) => (r?.status === 'FINISHED' ? r.taskId : -1));
        return [...ids, offlineTasks[i] as number];
      });
      await Promise.all(
        devices.flatMap((d, i) =>
          (taskIds[i] ?? []).map((taskId) =>
            watcher.waitFor(
              (m) => isStatus(m, d.id, taskId, 'FINISHED'),
              `${d.id} task ${taskId} FINISHED on B`,
            ),
          ),
        ),
      );

      // The controller that was on A followed to B (the next URL of its list) and resubscribed.
      for (const [i, d] of devices.entries()) {
        const taskId = offlineTasks[i] as number;
        await until(
          () => follower.tasks(d.id).some((t) => t.id === taskId && t.status === 'FINISHED'),
          `the controller that was on A to see ${d.id} task ${taskId} FINISHED`,
        );
      }

      // Nothing ran twice: exactly the three new tasks started, each once.
      devices.forEach((d, i) => {
        expect(d.started.size).toBe((before[i] ?? 0) + 3);
        expect([...d.started.values()].every((count) => count === 1)).toBe(true);
        expect(taskIds[i]?.every((id) => d.started.get(id) === 1)).toBe(true);
      });
    });
  },
);
